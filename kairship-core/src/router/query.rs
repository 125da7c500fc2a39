//! List queries (selectors, fuzzy name, sorting, pagination) and their evaluation over a set of
//! objects. Pure: the cache and the direct backend share it, so both answer alike.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::jiff::Timestamp;
use kube::core::{DynamicObject, Expression, Selector};
use serde_json::Value;

use super::error::RouterError;
use super::selector::{FieldSelector, expressions_match, field_value, parse_label_selector};

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
    /// `metadata.namespace` (then name).
    Namespace,
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
    /// Only objects of these namespaces; empty: any namespace.
    pub namespaces: Vec<String>,
    /// Sort key.
    pub sort_by: SortBy,
    /// Sort by this field instead of `sort_by`: a printer column's JSONPath of plain field
    /// names (`.spec.replicas`, `.status.readyReplicas`); ties by name.
    pub sort_field: Option<String>,
    /// Sort direction.
    pub sort_dir: SortDir,
    /// 1-based page number; defaults to 1.
    pub page: Option<u32>,
    /// Items per page; `None` returns every match on one page.
    pub page_size: Option<u32>,
}

/// Where a paged list stopped: the last object of the previous page. Kubernetes clients pass
/// it back as an opaque `continue` string ([`ContinueToken::encode`]). Resuming after an object
/// rather than at an offset means objects added or removed meanwhile shift no page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    /// Namespace of the last object (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// Name of the last object.
    pub name: String,
}

impl ContinueToken {
    /// The token of `object`.
    pub fn of(object: &(impl ListFields + ?Sized)) -> Self {
        ContinueToken {
            namespace: object.namespace().map(str::to_owned),
            name: object.name().unwrap_or_default().to_owned(),
        }
    }

    /// The opaque `continue` string: hex of `namespace/name`.
    pub fn encode(&self) -> String {
        let plain = format!("{}/{}", self.namespace.as_deref().unwrap_or(""), self.name);
        plain.bytes().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads a `continue` string made by [`ContinueToken::encode`].
    pub fn decode(token: &str) -> Result<Self, RouterError> {
        let invalid = |reason: &str| RouterError::InvalidQuery {
            parameter: "continue",
            reason: reason.to_owned(),
        };
        if !token.len().is_multiple_of(2) || !token.is_ascii() {
            return Err(invalid("not a token this server issued"));
        }
        let bytes = (0..token.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&token[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|_| invalid("not a token this server issued"))?;
        let plain =
            String::from_utf8(bytes).map_err(|_| invalid("not a token this server issued"))?;
        let (namespace, name) = plain
            .split_once('/')
            .ok_or_else(|| invalid("not a token this server issued"))?;
        if name.is_empty() {
            return Err(invalid("the token names no object"));
        }
        Ok(ContinueToken {
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            name: name.to_owned(),
        })
    }
}

/// What a list is selected, ordered and paged by, read from a whole object or from a
/// backend's compact index of one (the embedded cache keeps one next to each object's JSON).
/// [`CompiledQuery`] reads objects only through it, so both forms answer a query alike.
pub trait ListFields {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.creationTimestamp`.
    fn creation_timestamp(&self) -> Option<Timestamp>;
    /// The value of the label `key`.
    fn label(&self, key: &str) -> Option<&str>;
    /// The field at a field selector's dotted `path`, rendered as [`field_value`] does.
    fn field_value(&self, path: &str) -> Cow<'_, str>;
    /// The value at a sort field's `path` (`metadata.*` included), if any.
    fn sort_value(&self, path: &[String]) -> Option<Cow<'_, Value>>;
}

impl ListFields for DynamicObject {
    fn name(&self) -> Option<&str> {
        self.metadata.name.as_deref()
    }

    fn namespace(&self) -> Option<&str> {
        self.metadata.namespace.as_deref()
    }

    fn creation_timestamp(&self) -> Option<Timestamp> {
        self.metadata.creation_timestamp.as_ref().map(|t| t.0)
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.as_ref()?.get(key).map(String::as_str)
    }

    fn field_value(&self, path: &str) -> Cow<'_, str> {
        Cow::Owned(field_value(self, path))
    }

    fn sort_value(&self, path: &[String]) -> Option<Cow<'_, Value>> {
        field_at(self, path)
    }
}

/// A [`ListQuery`] with its selectors parsed and its paging validated.
#[derive(Clone, Debug)]
pub struct CompiledQuery {
    /// Parsed label selector.
    pub labels: Selector,
    /// The expressions of `labels`, which objects are matched against.
    label_expressions: Vec<Expression>,
    /// Parsed field selector.
    pub fields: FieldSelector,
    /// Lower-cased fuzzy name filter.
    pub name: Option<String>,
    /// Only objects of these namespaces; empty: any namespace.
    pub namespaces: Vec<String>,
    /// Sort key.
    pub sort_by: SortBy,
    /// The field names of `sort_field`, which sorts instead of `sort_by`.
    pub sort_field: Option<Vec<String>>,
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
        let sort_field = self
            .sort_field
            .as_deref()
            .map(parse_sort_field)
            .transpose()?;
        let labels = parse_label_selector(self.label_selector.as_deref().unwrap_or(""))?;
        Ok(CompiledQuery {
            label_expressions: labels.clone().into_iter().collect(),
            labels,
            fields: FieldSelector::parse(self.field_selector.as_deref().unwrap_or(""))?,
            name: self
                .name
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_lowercase),
            namespaces: self.namespaces.clone(),
            sort_by: self.sort_by,
            sort_field,
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
    /// Each item's JSON (with `apiVersion` and `kind`), in the same order, when the backend
    /// keeps objects pre-rendered (the embedded cache); answers are then assembled from these
    /// bytes instead of serializing every object again. In a page from
    /// [`ReadBackend::list_rendered`](super::ReadBackend::list_rendered), these bytes are the
    /// objects and `items` may hold only each object's name and namespace.
    pub rendered: Option<Vec<Bytes>>,
}

impl ObjectPage {
    /// Matching objects after this page.
    pub fn remaining(&self) -> usize {
        let p = &self.pagination;
        let before = (p.page.saturating_sub(1) as usize).saturating_mul(p.page_size as usize);
        p.total
            .saturating_sub(before.saturating_add(self.items.len()))
    }

    /// Where the next page starts, when objects remain after this one.
    pub fn continue_token(&self) -> Option<ContinueToken> {
        if self.remaining() == 0 {
            return None;
        }
        self.items.last().map(|o| ContinueToken::of(o.as_ref()))
    }

    /// A Kubernetes-style chunk of a whole list in kube-apiserver's order, by namespace then
    /// name ([`SortBy::Namespace`] ascending): the objects after `after`, at most `limit` of
    /// them. `total` becomes the number of objects after `after`, so
    /// [`ObjectPage::remaining`] and [`ObjectPage::continue_token`] describe what is left.
    pub fn chunk(mut self, after: Option<&ContinueToken>, limit: Option<u32>) -> ObjectPage {
        let start = after.map_or(0, |anchor| {
            self.items.partition_point(|o| {
                let meta = &o.metadata;
                (
                    meta.namespace.as_deref(),
                    meta.name.as_deref().unwrap_or_default(),
                ) <= (anchor.namespace.as_deref(), anchor.name.as_str())
            })
        });
        let total = self.items.len() - start;
        let (_, end, page_size, pages) = page_bounds(total, 1, limit.map(|l| l.max(1)));
        let range = start..start + end;
        self.items = self.items.drain(range.clone()).collect();
        if let Some(rendered) = self.rendered.as_mut() {
            *rendered = if rendered.len() >= range.end {
                rendered.drain(range).collect()
            } else {
                Vec::new()
            };
        }
        self.pagination = Pagination {
            total,
            page: 1,
            page_size,
            pages,
        };
        self
    }
}

/// The field selector paths answered from an object's name, namespace and resourceVersion.
const METADATA_FIELD_SELECTORS: [&str; 3] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.resourceVersion",
];

/// Whether a sort field is one of the metadata kept for lists: name, namespace,
/// resourceVersion, creationTimestamp or (a) label.
fn sorts_on_list_metadata(path: &[String]) -> bool {
    match path {
        [first, second, ..] if first == "metadata" => matches!(
            second.as_str(),
            "name" | "namespace" | "resourceVersion" | "creationTimestamp" | "labels"
        ),
        _ => false,
    }
}

impl CompiledQuery {
    /// Whether the query reads more of an object than its name, namespace, resourceVersion,
    /// creationTimestamp and labels (a field selector or a sort field on other fields): a
    /// backend that keeps only those next to each object's JSON must then decode the objects
    /// to answer it.
    pub fn reads_beyond_metadata(&self) -> bool {
        let fields = self
            .fields
            .0
            .iter()
            .any(|r| !METADATA_FIELD_SELECTORS.contains(&r.path.as_str()));
        let sort = self
            .sort_field
            .as_deref()
            .is_some_and(|path| !sorts_on_list_metadata(path));
        fields || sort
    }

    /// Whether `object` in `namespace` (`None`: any) passes the selectors and the name filter.
    pub fn matches(&self, namespace: Option<&str>, object: &(impl ListFields + ?Sized)) -> bool {
        if let Some(ns) = namespace
            && object.namespace() != Some(ns)
        {
            return false;
        }
        if !self.namespaces.is_empty()
            && !object
                .namespace()
                .is_some_and(|ns| self.namespaces.iter().any(|n| n == ns))
        {
            return false;
        }
        if let Some(needle) = &self.name {
            let name = object.name().unwrap_or_default();
            if !contains_ignore_case(name, needle) {
                return false;
            }
        }
        expressions_match(&self.label_expressions, |key| object.label(key))
            && (self.fields.selects_all()
                || self.fields.matches_with(|path| object.field_value(path)))
    }

    /// Filters, sorts and pages `objects`.
    pub fn select<I>(&self, namespace: Option<&str>, objects: I) -> ObjectPage
    where
        I: IntoIterator<Item = Arc<DynamicObject>>,
    {
        let (items, pagination) = self.select_by(namespace, objects, |o| o.as_ref());
        ObjectPage {
            items,
            pagination,
            resource_version: None,
            rendered: None,
        }
    }

    /// Filters, sorts and pages objects that come with their JSON, keeping the JSON of the
    /// page's items in [`ObjectPage::rendered`].
    pub fn select_rendered<I>(&self, namespace: Option<&str>, objects: I) -> ObjectPage
    where
        I: IntoIterator<Item = (Arc<DynamicObject>, Bytes)>,
    {
        let (page, pagination) = self.select_by(namespace, objects, |(o, _)| o.as_ref());
        let (items, rendered) = page.into_iter().unzip();
        ObjectPage {
            items,
            pagination,
            resource_version: None,
            rendered: Some(rendered),
        }
    }

    /// Filters, sorts and pages `objects`, each read through `fields`: the items of the page
    /// and its paging facts.
    pub fn select_by<T, I, F, O>(
        &self,
        namespace: Option<&str>,
        objects: I,
        fields: F,
    ) -> (Vec<T>, Pagination)
    where
        I: IntoIterator<Item = T>,
        F: Fn(&T) -> &O,
        O: ListFields + ?Sized,
    {
        let mut matched: Vec<T> = objects
            .into_iter()
            .filter(|o| self.matches(namespace, fields(o)))
            .collect();
        let (sort_by, sort_dir) = (self.sort_by, self.sort_dir);
        match &self.sort_field {
            Some(path) => {
                // Each object's value is read once, not once per comparison.
                let values: Vec<Option<Cow<'_, Value>>> =
                    matched.iter().map(|o| fields(o).sort_value(path)).collect();
                let mut order: Vec<usize> = (0..matched.len()).collect();
                order.sort_by(|&i, &j| {
                    let (a, b) = (fields(&matched[i]), fields(&matched[j]));
                    let ord = compare_values(values[i].as_deref(), values[j].as_deref())
                        .then_with(|| compare(SortBy::Name, SortDir::Asc, a, b));
                    match sort_dir {
                        SortDir::Asc => ord,
                        SortDir::Desc => ord.reverse(),
                    }
                });
                drop(values);
                let mut slots: Vec<Option<T>> = matched.into_iter().map(Some).collect();
                matched = order
                    .into_iter()
                    .filter_map(|i| slots.get_mut(i).and_then(Option::take))
                    .collect();
            }
            None => {
                matched.sort_unstable_by(|a, b| compare(sort_by, sort_dir, fields(a), fields(b)))
            }
        }
        let total = matched.len();
        let (start, end, page_size, pages) = page_bounds(total, self.page, self.page_size);
        let items = if start < end {
            matched.drain(start..end).collect()
        } else {
            Vec::new()
        };
        let pagination = Pagination {
            total,
            page: self.page,
            page_size,
            pages,
        };
        (items, pagination)
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

/// The field names of a sort field: a JSONPath of plain names, `.spec.replicas`
/// (the leading dot may be left out), at most 16 names of letters, digits, `_` and `-`.
fn parse_sort_field(path: &str) -> Result<Vec<String>, RouterError> {
    let names: Vec<String> = path
        .strip_prefix('.')
        .unwrap_or(path)
        .split('.')
        .map(str::to_owned)
        .collect();
    let ok = names.len() <= 16
        && names.iter().all(|n| {
            !n.is_empty()
                && n.len() <= 63
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        });
    if ok {
        Ok(names)
    } else {
        Err(RouterError::InvalidQuery {
            parameter: "sortField",
            reason: format!(
                "{path:?} is not a field path: field names separated by '.' \
                 (.spec.replicas); array indexes and filters are not supported"
            ),
        })
    }
}

/// The value at `path` of an object (`metadata.*` included), if any.
fn field_at<'a>(object: &'a DynamicObject, path: &[String]) -> Option<Cow<'a, Value>> {
    if path.first().map(String::as_str) == Some("metadata") {
        let meta = serde_json::to_value(&object.metadata).ok()?;
        return path[1..]
            .iter()
            .try_fold(&meta, |v, name| v.get(name))
            .cloned()
            .map(Cow::Owned);
    }
    path.iter()
        .try_fold(&object.data, |v, name| v.get(name))
        .map(Cow::Borrowed)
}

/// Orders field values: missing, null, booleans, numbers (by value), strings, then arrays and
/// objects (by their JSON text).
fn compare_values(va: Option<&Value>, vb: Option<&Value>) -> Ordering {
    fn rank(v: Option<&Value>) -> u8 {
        match v {
            None => 0,
            Some(Value::Null) => 1,
            Some(Value::Bool(_)) => 2,
            Some(Value::Number(_)) => 3,
            Some(Value::String(_)) => 4,
            Some(_) => 5,
        }
    }
    rank(va).cmp(&rank(vb)).then_with(|| match (va, vb) {
        (Some(Value::Bool(x)), Some(Value::Bool(y))) => x.cmp(y),
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.total_cmp(&y)
        }
        (Some(Value::String(x)), Some(Value::String(y))) => x.cmp(y),
        (Some(x), Some(y)) => x.to_string().cmp(&y.to_string()),
        _ => Ordering::Equal,
    })
}

fn compare<O: ListFields + ?Sized>(by: SortBy, dir: SortDir, a: &O, b: &O) -> Ordering {
    let by_name = || {
        a.name()
            .cmp(&b.name())
            .then_with(|| a.namespace().cmp(&b.namespace()))
    };
    let ord = match by {
        SortBy::Name => by_name(),
        SortBy::CreationTimestamp => a
            .creation_timestamp()
            .cmp(&b.creation_timestamp())
            .then_with(by_name),
        SortBy::Namespace => a
            .namespace()
            .cmp(&b.namespace())
            .then_with(|| a.name().cmp(&b.name())),
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
                    q.sort_by = SortBy::Namespace;
                    q.sort_dir = SortDir::Desc;
                }),
                None,
                vec!["cache", "Web-2", "web-1", "db"],
                4,
                1,
            ),
            (
                q(|q| {
                    q.sort_field = Some(".metadata.labels.app".into());
                    q.sort_dir = SortDir::Desc;
                }),
                None,
                vec!["web-1", "Web-2", "db", "cache"],
                4,
                1,
            ),
            (
                q(|q| q.sort_field = Some("metadata.creationTimestamp".into())),
                None,
                vec!["db", "Web-2", "web-1", "cache"],
                4,
                1,
            ),
            (
                q(|q| q.namespaces = vec!["b".into(), "c".into()]),
                None,
                vec!["Web-2", "cache"],
                2,
                1,
            ),
            (
                q(|q| q.namespaces = vec!["a".into(), "b".into()]),
                None,
                vec!["Web-2", "cache", "db", "web-1"],
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
    fn continue_tokens_round_trip_and_reject_garbage() {
        for token in [
            ContinueToken {
                namespace: Some("team-a".into()),
                name: "web-1".into(),
            },
            ContinueToken {
                namespace: None,
                name: "node-1".into(),
            },
        ] {
            let encoded = token.encode();
            assert!(encoded.bytes().all(|b| b.is_ascii_hexdigit()), "{encoded}");
            assert_eq!(ContinueToken::decode(&encoded).unwrap(), token);
        }
        for garbage in ["", "abc", "zz", "2f", "not-hex!", "ff"] {
            assert!(
                matches!(
                    ContinueToken::decode(garbage),
                    Err(RouterError::InvalidQuery {
                        parameter: "continue",
                        ..
                    })
                ),
                "{garbage:?}"
            );
        }
    }

    #[test]
    fn chunks_resume_after_the_continue_token() {
        // Walk the fixture in chunks of 1, 2, 3 and 10, and with a label filter.
        for (limit, label, want) in [
            (1, None, vec!["db", "web-1", "Web-2", "cache"]),
            (2, None, vec!["db", "web-1", "Web-2", "cache"]),
            (3, None, vec!["db", "web-1", "Web-2", "cache"]),
            (10, None, vec!["db", "web-1", "Web-2", "cache"]),
            (1, Some("app=web"), vec!["web-1", "Web-2"]),
        ] {
            let query = ListQuery {
                label_selector: label.map(str::to_owned),
                sort_by: SortBy::Namespace,
                ..ListQuery::default()
            }
            .compile()
            .unwrap();
            let mut seen = Vec::new();
            let mut after = None;
            let mut chunks = 0;
            loop {
                chunks += 1;
                let page = query
                    .select(None, fixture())
                    .chunk(after.as_ref(), Some(limit));
                assert!(page.items.len() <= limit as usize);
                seen.extend(names(&page));
                assert_eq!(page.remaining(), page.pagination.total - page.items.len());
                match page.continue_token() {
                    Some(token) => after = Some(token),
                    None => break,
                }
                assert!(chunks < 10, "never ends");
            }
            assert_eq!(seen, want, "{limit} {label:?}");
            assert_eq!(chunks, want.len().div_ceil(limit as usize).max(1));
        }
        // An object removed between chunks shifts nothing: the next chunk starts after the
        // token's object whether or not it still exists.
        let query = ListQuery {
            sort_by: SortBy::Namespace,
            ..ListQuery::default()
        }
        .compile()
        .unwrap();
        let first = query.select(None, fixture()).chunk(None, Some(2));
        let token = first.continue_token().unwrap();
        assert_eq!(token.name, "web-1");
        let without_it: Vec<_> = fixture()
            .into_iter()
            .filter(|o| o.metadata.name.as_deref() != Some("web-1"))
            .collect();
        let next = query.select(None, without_it).chunk(Some(&token), Some(2));
        assert_eq!(names(&next), ["Web-2", "cache"]);
        assert_eq!(next.continue_token(), None);
        // Without a limit the chunk is everything after the token.
        let rest = query.select(None, fixture()).chunk(Some(&token), None);
        assert_eq!(names(&rest), ["Web-2", "cache"]);
    }

    #[test]
    fn rendered_selection_keeps_json_next_to_its_object() {
        let objects: Vec<(Arc<DynamicObject>, Bytes)> = fixture()
            .into_iter()
            .map(|o| {
                let json = Bytes::from(serde_json::to_vec(o.as_ref()).unwrap());
                (o, json)
            })
            .collect();
        let query = ListQuery {
            sort_dir: SortDir::Desc,
            page_size: Some(3),
            ..ListQuery::default()
        };
        let page = query
            .compile()
            .unwrap()
            .select_rendered(None, objects.clone());
        let rendered = page.rendered.as_ref().unwrap();
        assert_eq!(rendered.len(), 3);
        for (object, json) in page.items.iter().zip(rendered) {
            let decoded: DynamicObject = serde_json::from_slice(json).unwrap();
            assert_eq!(decoded.metadata.name, object.metadata.name);
        }
        assert_eq!(names(&page), ["web-1", "db", "cache"]);
        // Chunks keep the JSON aligned too.
        let whole = ListQuery {
            sort_by: SortBy::Namespace,
            ..ListQuery::default()
        }
        .compile()
        .unwrap()
        .select_rendered(None, objects);
        let token = ContinueToken {
            namespace: Some("a".into()),
            name: "db".into(),
        };
        let chunk = whole.chunk(Some(&token), Some(2));
        assert_eq!(names(&chunk), ["web-1", "Web-2"]);
        let rendered = chunk.rendered.as_ref().unwrap();
        assert_eq!(rendered.len(), 2);
        let decoded: DynamicObject = serde_json::from_slice(&rendered[1]).unwrap();
        assert_eq!(decoded.metadata.name.as_deref(), Some("Web-2"));
    }

    #[test]
    fn reads_beyond_metadata_table() {
        let q = |f: fn(&mut ListQuery)| {
            let mut q = ListQuery::default();
            f(&mut q);
            q.compile().unwrap()
        };
        let cases: Vec<(&str, CompiledQuery, bool)> = vec![
            ("nothing", q(|_| {}), false),
            (
                "labels, name, namespaces, sort and paging",
                q(|q| {
                    q.label_selector = Some("app in (web,db),!legacy".into());
                    q.name = Some("web".into());
                    q.namespaces = vec!["a".into()];
                    q.sort_by = SortBy::CreationTimestamp;
                    q.sort_dir = SortDir::Desc;
                    q.page_size = Some(10);
                }),
                false,
            ),
            (
                "field selector on name and namespace",
                q(|q| q.field_selector = Some("metadata.name=web,metadata.namespace!=b".into())),
                false,
            ),
            (
                "field selector on resourceVersion",
                q(|q| q.field_selector = Some("metadata.resourceVersion=7".into())),
                false,
            ),
            (
                "field selector on uid",
                q(|q| q.field_selector = Some("metadata.uid=x".into())),
                true,
            ),
            (
                "field selector on status",
                q(|q| q.field_selector = Some("metadata.name=web,status.phase=Running".into())),
                true,
            ),
            (
                "sort by a label",
                q(|q| q.sort_field = Some(".metadata.labels.app".into())),
                false,
            ),
            (
                "sort by creationTimestamp",
                q(|q| q.sort_field = Some("metadata.creationTimestamp".into())),
                false,
            ),
            (
                "sort by an annotation",
                q(|q| q.sort_field = Some(".metadata.annotations.owner".into())),
                true,
            ),
            (
                "sort by the whole metadata",
                q(|q| q.sort_field = Some(".metadata".into())),
                true,
            ),
            (
                "sort by a printer column",
                q(|q| q.sort_field = Some(".spec.replicas".into())),
                true,
            ),
        ];
        for (what, query, want) in cases {
            assert_eq!(query.reads_beyond_metadata(), want, "{what}");
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
