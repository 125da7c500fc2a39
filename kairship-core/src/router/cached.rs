//! What the embedded cache keeps of an object: its JSON, the only full copy, and a compact
//! index of the fields lists are selected, ordered and paged by (name, namespace,
//! resourceVersion, creationTimestamp, labels; see [`CompiledQuery::reads_beyond_metadata`]).
//! The index takes a few hundred bytes: the namespace is shared by the objects of a namespace,
//! a numeric resourceVersion is a number, the timestamp is a plain value and the labels are
//! two allocations whatever their number.
//!
//! [`CompiledQuery::reads_beyond_metadata`]: super::CompiledQuery::reads_beyond_metadata

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::core::DynamicObject;
use serde_json::Value;

use super::decision::parse_version;
use super::query::ListFields;

/// A resourceVersion as the cache keeps it: a number when the text is one written canonically
/// (as kube-apiserver's are), else the text itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Version {
    /// The object has none.
    Absent,
    /// Text that is exactly this number written in decimal.
    Number(u64),
    /// Any other text.
    Text(Box<str>),
}

impl Version {
    pub(super) fn parse(text: Option<&str>) -> Self {
        match text {
            None => Version::Absent,
            Some(text) => match text.parse::<u64>() {
                Ok(n) if n.to_string() == text => Version::Number(n),
                _ => Version::Text(text.into()),
            },
        }
    }

    /// The resourceVersion as the object wrote it.
    pub(super) fn text(&self) -> Option<Cow<'_, str>> {
        match self {
            Version::Absent => None,
            Version::Number(n) => Some(Cow::Owned(n.to_string())),
            Version::Text(text) => Some(Cow::Borrowed(text)),
        }
    }

    /// The resourceVersion as a number, 0 when there is none or not a numeric one (as
    /// `decision::version_of` reads it).
    pub(super) fn number(&self) -> u64 {
        match self {
            Version::Absent => 0,
            Version::Number(n) => *n,
            Version::Text(text) => parse_version(text).unwrap_or(0),
        }
    }
}

/// Labels in two allocations: their keys and values one after the other in one string, and
/// where each ends. Sorted by key, each key once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct PackedLabels {
    text: Box<str>,
    /// End (in `text`) of key 0, value 0, key 1, value 1, ...
    ends: Box<[u32]>,
}

impl PackedLabels {
    /// Packs `pairs` as a label map holds them: sorted by key, the last value of a key
    /// repeated winning. `None` if their text exceeds 4 GiB.
    pub(super) fn new<K: AsRef<str>, V: AsRef<str>>(mut pairs: Vec<(K, V)>) -> Option<Self> {
        // A stable sort keeps repeated keys in arrival order, so the last of each run wins.
        pairs.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
        let mut text = String::new();
        let mut ends = Vec::with_capacity(pairs.len() * 2);
        for (i, (key, value)) in pairs.iter().enumerate() {
            let (key, value) = (key.as_ref(), value.as_ref());
            let repeated = pairs.get(i + 1).is_some_and(|next| next.0.as_ref() == key);
            if repeated {
                continue;
            }
            text.push_str(key);
            ends.push(u32::try_from(text.len()).ok()?);
            text.push_str(value);
            ends.push(u32::try_from(text.len()).ok()?);
        }
        Some(PackedLabels {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len() / 2
    }

    fn slice(&self, start: u32, end: u32) -> &str {
        self.text
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// The `i`th (key, value).
    fn pair(&self, i: usize) -> (&str, &str) {
        let start = match i.checked_sub(1) {
            Some(previous) => self.ends.get(previous * 2 + 1).copied().unwrap_or(0),
            None => 0,
        };
        let key_end = self.ends.get(i * 2).copied().unwrap_or(start);
        let value_end = self.ends.get(i * 2 + 1).copied().unwrap_or(key_end);
        (self.slice(start, key_end), self.slice(key_end, value_end))
    }

    /// Every (key, value), sorted by key.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (0..self.len()).map(|i| self.pair(i))
    }

    /// The value of `key`.
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            let (k, v) = self.pair(middle);
            match k.cmp(key) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(v),
            }
        }
        None
    }
}

/// One cached object: its JSON (with `apiVersion` and `kind`) and the index lists read.
#[derive(Debug)]
pub(super) struct CachedObject {
    /// Shared with the other cached objects of its namespace.
    pub(super) namespace: Option<Arc<str>>,
    pub(super) name: Arc<str>,
    pub(super) version: Version,
    pub(super) created: Option<Timestamp>,
    /// `None` when the object has no `labels` (an empty map is kept as one).
    pub(super) labels: Option<PackedLabels>,
    pub(super) json: Bytes,
}

/// The key of a cached object: (namespace, name), as kube-apiserver stores them, so that the
/// objects of one namespace are one range.
pub(super) type ObjectKey = (Option<Arc<str>>, Arc<str>);

impl CachedObject {
    pub(super) fn key(&self) -> ObjectKey {
        (self.namespace.clone(), self.name.clone())
    }

    /// The object with only its name and namespace, as a page of
    /// [`ReadBackend::list_rendered`] carries it next to the JSON: what paging and `continue`
    /// tokens read, built for the page's objects only, in as few allocations as it can be.
    ///
    /// [`ReadBackend::list_rendered`]: super::ReadBackend::list_rendered
    pub(super) fn identity_object(&self) -> DynamicObject {
        DynamicObject {
            types: None,
            metadata: ObjectMeta {
                name: Some(self.name.to_string()),
                namespace: self.namespace.as_deref().map(str::to_owned),
                ..ObjectMeta::default()
            },
            data: Value::Null,
        }
    }

    /// The value of one indexed metadata field, as `ObjectMeta` serializes it.
    fn metadata_value(&self, field: &str) -> Option<Value> {
        match field {
            "name" => Some(Value::String(self.name.to_string())),
            "namespace" => self.namespace.as_deref().map(|ns| Value::String(ns.into())),
            "resourceVersion" => self.version.text().map(|v| Value::String(v.into_owned())),
            "creationTimestamp" => self
                .created
                .and_then(|t| serde_json::to_value(Time(t)).ok()),
            "labels" => self.labels.as_ref().map(|labels| {
                Value::Object(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
                        .collect(),
                )
            }),
            _ => None,
        }
    }
}

/// Only the indexed fields: a query reading others (`reads_beyond_metadata`) is answered from
/// the decoded objects instead, so the others read as missing here.
impl ListFields for CachedObject {
    fn name(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn creation_timestamp(&self) -> Option<Timestamp> {
        self.created
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key)
    }

    fn field_value(&self, path: &str) -> Cow<'_, str> {
        match path {
            "metadata.name" => Cow::Borrowed(&self.name),
            "metadata.namespace" => Cow::Borrowed(self.namespace.as_deref().unwrap_or_default()),
            "metadata.resourceVersion" => self.version.text().unwrap_or_default(),
            _ => Cow::Borrowed(""),
        }
    }

    fn sort_value(&self, path: &[String]) -> Option<Cow<'_, Value>> {
        let [first, field, rest @ ..] = path else {
            return None;
        };
        if first != "metadata" {
            return None;
        }
        let value = self.metadata_value(field)?;
        rest.iter()
            .try_fold(&value, |v, name| v.get(name))
            .cloned()
            .map(Cow::Owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_keep_their_text_and_number() {
        // (text, kept as, text back, number)
        let cases = [
            (None, Version::Absent, None, 0),
            (Some("42"), Version::Number(42), Some("42"), 42),
            (Some("0"), Version::Number(0), Some("0"), 0),
            (Some("007"), Version::Text("007".into()), Some("007"), 7),
            (Some("+5"), Version::Text("+5".into()), Some("+5"), 5),
            (Some(""), Version::Text("".into()), Some(""), 0),
            (Some("abc"), Version::Text("abc".into()), Some("abc"), 0),
            (
                Some("18446744073709551616"),
                Version::Text("18446744073709551616".into()),
                Some("18446744073709551616"),
                0,
            ),
        ];
        for (text, kept, back, number) in cases {
            let version = Version::parse(text);
            assert_eq!(version, kept, "{text:?}");
            assert_eq!(version.text().as_deref(), back, "{text:?}");
            assert_eq!(version.number(), number, "{text:?}");
            assert_eq!(
                version.number(),
                text.and_then(parse_version).unwrap_or(0),
                "{text:?}"
            );
        }
    }

    #[test]
    fn packed_labels_table() {
        // (pairs as they arrive, sorted pairs kept)
        type Pairs<'a> = Vec<(&'a str, &'a str)>;
        let cases: Vec<(Pairs, Pairs)> = vec![
            (vec![], vec![]),
            (vec![("app", "web")], vec![("app", "web")]),
            (
                vec![("tier", "front"), ("app", "web"), ("a", "")],
                vec![("a", ""), ("app", "web"), ("tier", "front")],
            ),
            (
                vec![("app", "old"), ("x", "1"), ("app", "new")],
                vec![("app", "new"), ("x", "1")],
            ),
            (
                vec![("ünï/cøde", "välue"), ("", "empty key")],
                vec![("", "empty key"), ("ünï/cøde", "välue")],
            ),
        ];
        for (pairs, want) in cases {
            let packed = PackedLabels::new(pairs.clone()).unwrap();
            assert_eq!(packed.iter().collect::<Vec<_>>(), want, "{pairs:?}");
            assert_eq!(packed.len(), want.len());
            for (key, value) in &want {
                assert_eq!(packed.get(key), Some(*value), "{key} in {pairs:?}");
            }
            for absent in ["zzz", "ap", "apps", "b"] {
                if !want.iter().any(|(k, _)| k == &absent) {
                    assert_eq!(packed.get(absent), None, "{absent} in {pairs:?}");
                }
            }
        }
    }
}
