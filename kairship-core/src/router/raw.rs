//! Objects as the embedded cache receives them. The cache's kube-runtime watcher (paging,
//! relisting on `410 Gone`, bookmarks, backoff) decodes every list page and watch event into
//! [`RawObject`]s: each keeps the object's JSON as it arrived and reads only the few metadata
//! fields the cache indexes, skipping the rest of the text without building anything of it.
//! A `DynamicObject` would build a `serde_json::Value` tree of the whole object first, many
//! times its JSON (docs/benchmarks.md, "embedded cache at scale").

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::core::{ApiResource, DynamicResourceScope, Resource};
use kube_kit::slim::JsonStr;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::cached::{CachedObject, PackedLabels, Version};
use super::decision::parse_version;

/// One object of a list page or watch event, as the cache's watcher decodes it: its JSON as
/// received and what the cache indexes of it. Decoding never fails on valid JSON: an object
/// whose indexed fields cannot be read carries the reason, and the cache leaves it out.
#[derive(Clone, Debug)]
pub(super) struct RawObject {
    json: Box<RawValue>,
    /// What the watcher reads (the resourceVersion), and the name and namespace when only
    /// those could be read.
    metadata: ObjectMeta,
    fields: Result<IndexedFields, String>,
}

/// What the cache indexes of an object, read from its JSON.
#[derive(Clone, Debug)]
struct IndexedFields {
    name: Box<str>,
    namespace: Option<Box<str>>,
    version: Version,
    created: Option<Time>,
    labels: Option<PackedLabels>,
    has_api_version: bool,
    has_kind: bool,
}

impl RawObject {
    /// Reads the indexed fields of `json` (an object as the watcher received it).
    pub(super) fn new(json: Box<RawValue>) -> Self {
        let (metadata, fields) = match index_fields(json.get()) {
            Ok(fields) => {
                let metadata = ObjectMeta {
                    resource_version: fields.version.text().map(Cow::into_owned),
                    ..ObjectMeta::default()
                };
                (metadata, Ok(fields))
            }
            Err(reason) => (identity_of(json.get()), Err(reason)),
        };
        RawObject {
            json,
            metadata,
            fields,
        }
    }

    /// An object of only the metadata the cache indexes (name, namespace, resourceVersion,
    /// creationTimestamp, labels), from what a metadata-only watch decoded: what a
    /// [`CacheContent::Metadata`](super::CacheContent::Metadata) cache keeps.
    pub(super) fn indexed_metadata(meta: &ObjectMeta) -> Self {
        let kept = ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            resource_version: meta.resource_version.clone(),
            creation_timestamp: meta.creation_timestamp.clone(),
            labels: meta.labels.clone(),
            ..ObjectMeta::default()
        };
        // Serializing plain metadata cannot fail; were it to, the empty object is left out of
        // the cache with the reason logged, as any object whose index cannot be read.
        let json = serde_json::value::to_raw_value(&serde_json::json!({ "metadata": kept }))
            .unwrap_or_else(|_| RawValue::NULL.to_owned());
        RawObject::new(json)
    }

    /// The resourceVersion as a number (0: none or not numeric).
    pub(super) fn version(&self) -> u64 {
        self.metadata
            .resource_version
            .as_deref()
            .and_then(parse_version)
            .unwrap_or(0)
    }

    /// (namespace, name) of the object, when they could be read.
    pub(super) fn identity(&self) -> Option<(Option<&str>, &str)> {
        match &self.fields {
            Ok(fields) => Some((fields.namespace.as_deref(), &fields.name)),
            Err(_) => Some((
                self.metadata.namespace.as_deref(),
                self.metadata.name.as_deref()?,
            )),
        }
    }

    /// Whether the object carries `apiVersion` and `kind` (`None`: unreadable).
    pub(super) fn has_type_meta(&self) -> Option<bool> {
        let fields = self.fields.as_ref().ok()?;
        Some(fields.has_api_version && fields.has_kind)
    }

    /// What the cache keeps of the object: its JSON in the `form` the instance's lists write
    /// items in (watch events always carry `apiVersion` and `kind`, list items of built-in
    /// kinds do not), and its index; `shared_namespace` gives the namespace's shared string.
    /// An error says why the object cannot be cached.
    pub(super) fn into_cached(
        self,
        resource: &ApiResource,
        form: ItemForm,
        shared_namespace: impl FnOnce(&str) -> Arc<str>,
    ) -> Result<CachedObject, String> {
        let fields = self.fields?;
        let json = Box::<str>::from(self.json);
        let json = match form {
            ItemForm::Typed => with_type_meta(
                json,
                (!fields.has_api_version).then_some(resource.api_version.as_str()),
                (!fields.has_kind).then_some(resource.kind.as_str()),
            )
            .ok_or("not a JSON object")?,
            ItemForm::Untyped if fields.has_api_version || fields.has_kind => {
                without_type_meta(json)
            }
            ItemForm::Untyped => json,
        };
        Ok(CachedObject {
            namespace: fields.namespace.as_deref().map(shared_namespace),
            name: Arc::from(fields.name),
            version: fields.version,
            created: fields.created.map(|t| t.0),
            labels: fields.labels,
            json: Bytes::from(json.into_boxed_bytes()),
        })
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawObject::new)
    }
}

impl Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// How an instance writes the items of its lists of a resource: kube-apiserver leaves
/// `apiVersion` and `kind` out of the items of built-in kinds and keeps them in those of custom
/// resources (which it stores as they were written); a list answer repeats what the instance
/// writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ItemForm {
    /// Items carry `apiVersion` and `kind`.
    Typed,
    /// Items carry neither.
    Untyped,
}

impl ItemForm {
    /// The form a list item shows, `None` when it cannot be read.
    pub(super) fn of_item(item: &RawObject) -> Option<Self> {
        item.has_type_meta().map(|typed| {
            if typed {
                ItemForm::Typed
            } else {
                ItemForm::Untyped
            }
        })
    }

    /// The form before any list item was seen: untyped for the groups of kube-apiserver's own
    /// kinds (the core group, groups without a dot and `*.k8s.io`, but for the custom
    /// resources kube-apiserver serves under `*.x-k8s.io`), typed for the others.
    pub(super) fn guess(resource: &ApiResource) -> Self {
        let group = resource.group.as_str();
        let built_in =
            !group.contains('.') || (group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io"));
        if built_in {
            ItemForm::Untyped
        } else {
            ItemForm::Typed
        }
    }
}

/// `json` without `apiVersion` and `kind` when they are its first two members (as
/// kube-apiserver writes objects), else unchanged.
pub(super) fn without_type_meta(json: Box<str>) -> Box<str> {
    match leading_type_meta_end(&json) {
        Some(end) => {
            let mut out = String::with_capacity(json.len() + 1 - end);
            out.push('{');
            out.push_str(json.get(end..).unwrap_or_default());
            out.into_boxed_str()
        }
        None => json,
    }
}

/// Where the member after a leading `"apiVersion":"…","kind":"…",` (either order, plain strings
/// with no escapes and no whitespace) starts.
fn leading_type_meta_end(json: &str) -> Option<usize> {
    let mut at = 1;
    json.strip_prefix('{')?;
    let mut seen = [false, false];
    for _ in 0..2 {
        let rest = json.get(at..)?;
        let (index, key) = if rest.starts_with("\"apiVersion\":\"") {
            (0, "\"apiVersion\":\"")
        } else if rest.starts_with("\"kind\":\"") {
            (1, "\"kind\":\"")
        } else {
            return None;
        };
        if std::mem::replace(&mut seen[index], true) {
            return None;
        }
        at += key.len();
        let value_end = json.get(at..)?.find('"')?;
        if json.get(at..at + value_end)?.contains('\\') {
            return None;
        }
        at += value_end + 1;
        json.get(at..)?.strip_prefix(',')?;
        at += 1;
    }
    // A member follows (an object of only its type would be `{}`, kept as it is).
    json.get(at..)?.starts_with('"').then_some(at)
}

/// `json` (an object) with `apiVersion` and `kind` written first where given (the ones it
/// lacks), the rest of its text unchanged; `None` when `json` is not an object.
pub(super) fn with_type_meta(
    json: Box<str>,
    api_version: Option<&str>,
    kind: Option<&str>,
) -> Option<Box<str>> {
    let body = json.trim_start();
    let inside = body.strip_prefix('{')?;
    if api_version.is_none() && kind.is_none() {
        return Some(json);
    }
    let leading = json.len() - body.len();
    let mut out = String::with_capacity(json.len() + 32);
    out.push_str(json.get(..leading).unwrap_or_default());
    out.push('{');
    for (field, value) in [("apiVersion", api_version), ("kind", kind)] {
        if let Some(value) = value {
            out.push('"');
            out.push_str(field);
            out.push_str("\":");
            // A JSON string literal; writing one cannot fail.
            out.push_str(&Value::String(value.to_owned()).to_string());
            out.push(',');
        }
    }
    if inside.trim_start().starts_with('}') {
        // An empty object: no member follows the ones written.
        out.pop();
    }
    out.push_str(inside);
    Some(out.into_boxed_str())
}

/// The indexed fields of an object's JSON, or why they cannot be read.
fn index_fields(json: &str) -> Result<IndexedFields, String> {
    if !json.trim_start().starts_with('{') {
        return Err("not a JSON object".into());
    }
    let slim: SlimObject<'_> = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let meta = slim.metadata;
    let name = meta.name.ok_or("the object has no metadata.name")?;
    let labels = match meta.labels {
        Some(SlimLabels(pairs)) => {
            Some(PackedLabels::new(pairs).ok_or("the labels take more than 4 GiB")?)
        }
        None => None,
    };
    Ok(IndexedFields {
        name: name.0.into(),
        namespace: meta.namespace.map(|ns| ns.0.into()),
        version: Version::parse(meta.resource_version.as_ref().map(|v| v.0.as_ref())),
        created: meta.creation_timestamp,
        labels,
        has_api_version: slim.api_version,
        has_kind: slim.kind,
    })
}

/// The name, namespace and resourceVersion of an object whose other indexed fields cannot be
/// read, as far as they can be.
fn identity_of(json: &str) -> ObjectMeta {
    #[derive(Deserialize)]
    struct Identity<'a> {
        #[serde(borrow)]
        metadata: IdentityMeta<'a>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct IdentityMeta<'a> {
        #[serde(borrow, default)]
        name: Option<JsonStr<'a>>,
        #[serde(borrow, default)]
        namespace: Option<JsonStr<'a>>,
        #[serde(borrow, default)]
        resource_version: Option<JsonStr<'a>>,
    }
    let text = |s: Option<JsonStr<'_>>| s.map(|s| s.0.into_owned());
    match serde_json::from_str::<Identity<'_>>(json) {
        Ok(Identity { metadata }) => ObjectMeta {
            name: text(metadata.name),
            namespace: text(metadata.namespace),
            resource_version: text(metadata.resource_version),
            ..ObjectMeta::default()
        },
        Err(_) => ObjectMeta::default(),
    }
}

/// The part of an object the cache reads; serde skips every other member unread.
#[derive(Deserialize)]
struct SlimObject<'a> {
    #[serde(rename = "apiVersion", default, deserialize_with = "present")]
    api_version: bool,
    #[serde(default, deserialize_with = "present")]
    kind: bool,
    #[serde(borrow)]
    metadata: SlimMeta<'a>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimMeta<'a> {
    #[serde(borrow, default)]
    name: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    namespace: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<JsonStr<'a>>,
    #[serde(default)]
    creation_timestamp: Option<Time>,
    #[serde(borrow, default)]
    labels: Option<SlimLabels<'a>>,
}

/// Whether a member is there, whatever its value.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// A label map's (key, value) pairs in the order of the JSON.
struct SlimLabels<'a>(Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'de: 'a, 'a> Deserialize<'de> for SlimLabels<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LabelsVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for LabelsVisitor<'a> {
            type Value = SlimLabels<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings to strings")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((key, value)) = map.next_entry::<JsonStr<'a>, JsonStr<'a>>()? {
                    pairs.push((key.0, value.0));
                }
                Ok(SlimLabels(pairs))
            }
        }
        deserializer.deserialize_map(LabelsVisitor(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::query::ListFields;
    use kube::core::DynamicObject;
    use serde_json::json;

    fn deployments() -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        )
    }

    fn raw(json: &str) -> RawObject {
        serde_json::from_str(json).unwrap()
    }

    fn cached(json: &str) -> Result<CachedObject, String> {
        raw(json).into_cached(&deployments(), ItemForm::Typed, |ns: &str| Arc::from(ns))
    }

    #[test]
    fn untyped_items_lose_a_leading_type_and_keep_the_rest() {
        // (object as received, as an untyped list writes it)
        let cases = [
            (
                r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            (
                r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"a"},"spec":{}}"#,
                r#"{"metadata":{"name":"a"},"spec":{}}"#,
            ),
            (
                r#"{"metadata":{"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            // Not leading, escaped or spaced: kept as received.
            (
                r#"{"metadata":{"name":"a"},"apiVersion":"apps/v1","kind":"Deployment"}"#,
                r#"{"metadata":{"name":"a"},"apiVersion":"apps/v1","kind":"Deployment"}"#,
            ),
            (
                r#"{"apiVersion":"a\"b","kind":"K","metadata":{"name":"a"}}"#,
                r#"{"apiVersion":"a\"b","kind":"K","metadata":{"name":"a"}}"#,
            ),
            (
                r#"{ "apiVersion":"v1","kind":"K","metadata":{"name":"a"}}"#,
                r#"{ "apiVersion":"v1","kind":"K","metadata":{"name":"a"}}"#,
            ),
        ];
        for (received, want) in cases {
            let kept = raw(received)
                .into_cached(&deployments(), ItemForm::Untyped, |ns: &str| Arc::from(ns))
                .unwrap();
            assert_eq!(std::str::from_utf8(&kept.json).unwrap(), want, "{received}");
            serde_json::from_slice::<serde_json::Value>(&kept.json).unwrap();
        }
    }

    #[test]
    fn item_forms_are_guessed_from_the_group_and_read_from_list_items() {
        for (group, want) in [
            ("", ItemForm::Untyped),
            ("apps", ItemForm::Untyped),
            ("networking.k8s.io", ItemForm::Untyped),
            ("gateway.networking.x-k8s.io", ItemForm::Typed),
            ("work.karmada.io", ItemForm::Typed),
        ] {
            let resource = ApiResource::from_gvk_with_plural(
                &kube::core::GroupVersionKind::gvk(group, "v1", "Thing"),
                "things",
            );
            assert_eq!(ItemForm::guess(&resource), want, "{group:?}");
        }
        let typed = raw(r#"{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}}"#);
        assert_eq!(ItemForm::of_item(&typed), Some(ItemForm::Typed));
        let untyped = raw(r#"{"metadata":{"name":"a"}}"#);
        assert_eq!(ItemForm::of_item(&untyped), Some(ItemForm::Untyped));
        assert_eq!(ItemForm::of_item(&raw(r#"{"spec":{}}"#)), None);
    }

    #[test]
    fn with_type_meta_table() {
        let (v, k) = (Some("apps/v1"), Some("Deployment"));
        // (json, apiVersion to add, kind to add, result)
        type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);
        let cases: Vec<Case> = vec![
            (
                r#"{"metadata":{"name":"a"}}"#,
                v,
                k,
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#),
            ),
            (
                "{}",
                v,
                k,
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#),
            ),
            (
                "{ \n }",
                v,
                k,
                Some("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\" \n }"),
            ),
            (
                " {\n  \"metadata\": {}\n}",
                v,
                k,
                Some(
                    " {\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\n  \"metadata\": {}\n}",
                ),
            ),
            (
                r#"{"kind":"Deployment","metadata":{}}"#,
                v,
                None,
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{}}"#),
            ),
            (
                r#"{"apiVersion":"apps/v1","metadata":{}}"#,
                None,
                k,
                Some(r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{}}"#),
            ),
            (
                r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#,
                None,
                None,
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#),
            ),
            (
                "{}",
                Some("example.com/v1"),
                Some("Quo\"te"),
                Some(r#"{"apiVersion":"example.com/v1","kind":"Quo\"te"}"#),
            ),
            ("[1]", v, k, None),
            ("\"x\"", v, k, None),
            ("[]", None, None, None),
        ];
        for (json, api_version, kind, want) in cases {
            let got = with_type_meta(json.into(), api_version, kind);
            assert_eq!(got.as_deref(), want, "{json}");
            if let Some(got) = got {
                serde_json::from_str::<serde_json::Value>(&got).unwrap();
            }
        }
    }

    #[test]
    fn index_fields_table() {
        // (object, name, namespace, resourceVersion, creationTimestamp, labels, apiVersion and
        // kind present)
        type Want<'a> = (
            &'a str,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<Vec<(&'a str, &'a str)>>,
            (bool, bool),
        );
        let cases: Vec<(serde_json::Value, Want)> = vec![
            (
                json!({"metadata": {"name": "web", "namespace": "shop", "resourceVersion": "42",
                    "creationTimestamp": "2026-01-02T03:04:05Z",
                    "labels": {"tier": "front", "app": "web"}, "annotations": {"a": "b"},
                    "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
                    "spec": {"replicas": 3}, "status": {"x": [1, 2, {"y": null}]}}),
                (
                    "web",
                    Some("shop"),
                    Some("42"),
                    Some("2026-01-02T03:04:05Z"),
                    Some(vec![("app", "web"), ("tier", "front")]),
                    (false, false),
                ),
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "n"}}),
                ("n", None, None, None, None, (true, true)),
            ),
            (
                json!({"kind": null, "metadata": {"name": "n", "labels": {},
                    "namespace": null, "creationTimestamp": null}}),
                ("n", None, None, None, Some(vec![]), (false, true)),
            ),
            (
                // Escaped strings are read as text.
                json!({"metadata": {"name": "a\"b\\c\u{e9}", "labels": {"k\n": "v\t"}}}),
                (
                    "a\"b\\c\u{e9}",
                    None,
                    None,
                    None,
                    Some(vec![("k\n", "v\t")]),
                    (false, false),
                ),
            ),
        ];
        for (object, (name, ns, rv, created, labels, types)) in cases {
            let fields = index_fields(&object.to_string()).unwrap();
            assert_eq!(&*fields.name, name, "{object}");
            assert_eq!(fields.namespace.as_deref(), ns, "{object}");
            assert_eq!(fields.version.text().as_deref(), rv, "{object}");
            assert_eq!(
                fields.created.map(|t| t.0.to_string()).as_deref(),
                created,
                "{object}"
            );
            assert_eq!(
                fields.labels.as_ref().map(|l| l.iter().collect::<Vec<_>>()),
                labels,
                "{object}"
            );
            assert_eq!((fields.has_api_version, fields.has_kind), types, "{object}");
        }
        // Repeated members, as a JSON map holds them: the last one wins.
        let fields =
            index_fields(r#"{"metadata":{"name":"a","labels":{"x":"1","y":"2","x":"3"}}}"#)
                .unwrap();
        let labels = fields.labels.unwrap();
        assert_eq!(labels.iter().collect::<Vec<_>>(), [("x", "3"), ("y", "2")]);
    }

    #[test]
    fn unreadable_objects_say_why_and_keep_their_identity() {
        // (object, identity still read)
        type Identity<'a> = Option<(Option<&'a str>, &'a str)>;
        let cases: Vec<(&str, Identity)> = vec![
            (
                r#"{"metadata":{"name":"a","namespace":"n","labels":{"x":1}}}"#,
                Some((Some("n"), "a")),
            ),
            (
                r#"{"metadata":{"name":"a","labels":{"x":null}}}"#,
                Some((None, "a")),
            ),
            (
                r#"{"metadata":{"name":"a","creationTimestamp":"yesterday"}}"#,
                Some((None, "a")),
            ),
            (
                r#"{"metadata":{"name":"a","labels":["x"]}}"#,
                Some((None, "a")),
            ),
            (r#"{"metadata":{"namespace":"n"}}"#, None),
            (r#"{"metadata":{"name":7}}"#, None),
            (r#"{"metadata":null}"#, None),
            (r#"{"spec":{}}"#, None),
            ("[]", None),
            ("null", None),
            ("\"text\"", None),
            (r#"["apps/v1","Deployment",{"name":"a"}]"#, None),
        ];
        for (json, identity) in cases {
            let object = raw(json);
            assert!(object.fields.is_err(), "{json}");
            assert_eq!(object.identity(), identity, "{json}");
            assert!(cached(json).is_err(), "{json}");
        }
        // The resourceVersion is still read for the watcher.
        let object = raw(r#"{"metadata":{"name":"a","resourceVersion":"9","labels":{"x":1}}}"#);
        assert_eq!(object.meta().resource_version.as_deref(), Some("9"));
        assert_eq!(object.version(), 9);
    }

    #[test]
    fn cached_objects_index_what_lists_read() {
        for object in [
            json!({"metadata": {"name": "web", "namespace": "shop", "uid": "u-1",
                "resourceVersion": "42", "generation": 3,
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "labels": {"app": "web", "tier": "front"}, "annotations": {"note": "x"},
                "finalizers": ["f"], "managedFields": [{"manager": "kubectl"}]},
                "spec": {"replicas": 2}}),
            json!({"metadata": {"name": "node-1", "resourceVersion": "0x1"}}),
            json!({"metadata": {"name": "e", "labels": {}}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "n"}}),
        ] {
            let text = object.to_string();
            let decoded: DynamicObject = serde_json::from_str(&text).unwrap();
            let kept = cached(&text).unwrap();
            // What the cache kept of the object before, as a DynamicObject, it now indexes.
            let meta = &decoded.metadata;
            assert_eq!(Some(&*kept.name), meta.name.as_deref(), "{object}");
            assert_eq!(
                kept.namespace.as_deref(),
                meta.namespace.as_deref(),
                "{object}"
            );
            assert_eq!(
                kept.version.text().as_deref(),
                meta.resource_version.as_deref(),
                "{object}"
            );
            assert_eq!(
                kept.created,
                meta.creation_timestamp.as_ref().map(|t| t.0),
                "{object}"
            );
            let labels = kept.labels.as_ref().map(|l| {
                l.iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect::<std::collections::BTreeMap<_, _>>()
            });
            assert_eq!(labels, meta.labels, "{object}");
            // A rendered page's item: the name and namespace only.
            let identity = kept.identity_object();
            assert_eq!(
                identity.metadata,
                ObjectMeta {
                    name: meta.name.clone(),
                    namespace: meta.namespace.clone(),
                    ..ObjectMeta::default()
                },
                "{object}"
            );
            assert!(identity.types.is_none());
            assert!(identity.data.is_null());
            assert_eq!(
                kept.version.number(),
                crate::router::decision::version_of(&decoded)
            );
            // The JSON is the object's with apiVersion and kind.
            let mut completed = decoded.clone();
            completed.types = Some(kube::core::TypeMeta {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
            });
            let json_back: DynamicObject = serde_json::from_slice(&kept.json).unwrap();
            assert_eq!(json_back, completed, "{object}");
            assert_eq!(ListFields::name(&kept), ListFields::name(&decoded));
        }
    }
}
