//! Objects read without `metadata.managedFields`.
//!
//! Server-side apply bookkeeping is often the largest part of an object, and controllers
//! rarely read it. client-go drops it with an informer transform, after decoding; [`Slim`]
//! skips it while decoding, so it is never built: a watch of busy pods parses noticeably
//! less. Use `Api<Slim<K>>` where `Api<K>` would be used for reads and watches:
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), kube::Error> {
//! use k8s_openapi::api::core::v1::Pod;
//! use kube_kit::slim::Slim;
//! let pods: kube::Api<Slim<Pod>> = kube::Api::all(client);
//! for pod in pods.list(&Default::default()).await? {
//!     let pod: Pod = pod.into_inner();
//!     assert!(pod.metadata.managed_fields.is_none());
//! }
//! # Ok(()) }
//! ```

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// `K` as read from the API server, without `metadata.managedFields` (always `None`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Slim<K>(pub K);

impl<K> Slim<K> {
    /// The object.
    pub fn into_inner(self) -> K {
        self.0
    }
}

impl<K> std::ops::Deref for Slim<K> {
    type Target = K;

    fn deref(&self) -> &K {
        &self.0
    }
}

impl<K: Resource> Resource for Slim<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }

    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl<K: Serialize> Serialize for Slim<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Slim<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Filtered {
            inner: deserializer,
            level: Level::Object,
        })
        .map(Slim)
    }
}

/// Where in the object a map is: the object itself (whose `metadata` member is filtered)
/// or its `metadata` (whose `managedFields` member is skipped).
#[derive(Clone, Copy)]
enum Level {
    Object,
    Metadata,
}

/// A deserializer whose maps are filtered at `level`; everything else passes through.
struct Filtered<D> {
    inner: D,
    level: Level,
}

/// Forwards the methods that cannot hold an object's members unchanged.
macro_rules! pass_through {
    ($($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.inner.$method(visitor)
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Filtered<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(FilteredVisitor {
            inner: visitor,
            level: self.level,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(FilteredVisitor {
            inner: visitor,
            level: self.level,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            FilteredVisitor {
                inner: visitor,
                level: self.level,
            },
        )
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_option(FilteredVisitor {
            inner: visitor,
            level: self.level,
        })
    }

    pass_through! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32
        deserialize_f64 deserialize_char deserialize_str deserialize_string deserialize_bytes
        deserialize_byte_buf deserialize_unit deserialize_seq deserialize_identifier
        deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_enum(name, variants, visitor)
    }
}

/// Hands the visitor filtered maps (and `Some` values still filtered).
struct FilteredVisitor<V> {
    inner: V,
    level: Level,
}

/// Forwards visits of values that are not maps.
macro_rules! visit_through {
    ($($method:ident: $ty:ty)*) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<V::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for FilteredVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(FilteredMap {
            inner: map,
            level: self.level,
            metadata_next: false,
        })
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Filtered {
            inner: deserializer,
            level: self.level,
        })
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.inner.visit_seq(seq)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(deserializer)
    }

    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(data)
    }

    visit_through! {
        visit_bool: bool visit_i64: i64 visit_u64: u64 visit_f64: f64 visit_i128: i128
        visit_u128: u128 visit_char: char visit_str: &str visit_borrowed_str: &'de str
        visit_string: String visit_bytes: &[u8] visit_borrowed_bytes: &'de [u8]
        visit_byte_buf: Vec<u8>
    }
}

/// The object's members, with `metadata` filtered (at [`Level::Object`]) or
/// `managedFields` skipped (at [`Level::Metadata`]).
struct FilteredMap<A> {
    inner: A,
    level: Level,
    /// The key just handed out was the object's `metadata`.
    metadata_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for FilteredMap<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(key) = self.inner.next_key_seed(KeySeed)? else {
                return Ok(None);
            };
            match (self.level, key.as_ref()) {
                (Level::Metadata, "managedFields") => {
                    self.inner.next_value::<IgnoredAny>()?;
                    continue;
                }
                (Level::Object, "metadata") => self.metadata_next = true,
                _ => self.metadata_next = false,
            }
            let key: serde::de::value::CowStrDeserializer<'de, A::Error> = key.into_deserializer();
            return seed.deserialize(key).map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.metadata_next) {
            return self.inner.next_value_seed(MetadataSeed(seed));
        }
        self.inner.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

/// Deserializes `metadata` with its `managedFields` skipped.
struct MetadataSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for MetadataSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Filtered {
            inner: deserializer,
            level: Level::Metadata,
        })
    }
}

/// Reads a member name, borrowed from the input when it can be.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A string read from JSON: borrowed from the text when it holds no escapes (no allocation),
/// copied otherwise. For decoders that read a few fields of large objects and compare or
/// copy them once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonStr<'a>(pub Cow<'a, str>);

impl JsonStr<'_> {
    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
            type Value = JsonStr<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: serde::de::Error>(
                self,
                v: &'de str,
            ) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Borrowed(v)))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(StrVisitor(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use serde_json::json;

    fn pod_json() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "p", "namespace": "ns", "labels": {"managedFields": "kept"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:containers": {}}}}],
                "annotations": {"a": "b"},
            },
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "env": [{"name": "managedFields", "value": "kept"}]}]},
            "status": {"phase": "Running"},
        })
    }

    #[test]
    fn managed_fields_are_skipped_and_nothing_else() {
        let text = serde_json::to_string(&pod_json()).unwrap();
        let slim: Slim<Pod> = serde_json::from_str(&text).unwrap();
        let mut full: Pod = serde_json::from_str(&text).unwrap();
        assert!(full.metadata.managed_fields.is_some());
        assert!(slim.metadata.managed_fields.is_none());
        full.metadata.managed_fields = None;
        assert_eq!(slim.0, full, "everything but managedFields is read alike");
        assert_eq!(
            slim.metadata.labels.as_ref().unwrap()["managedFields"],
            "kept"
        );
    }

    #[test]
    fn data_named_like_metadata_is_kept() {
        // A ConfigMap key called "metadata" or "managedFields" is data, not metadata.
        let text = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "managedFields": [{"manager": "m"}]},
            "data": {"metadata": "x", "managedFields": "y"}})
        .to_string();
        let slim: Slim<ConfigMap> = serde_json::from_str(&text).unwrap();
        let data = slim.0.data.unwrap();
        assert_eq!(data["metadata"], "x");
        assert_eq!(data["managedFields"], "y");
        assert!(slim.0.metadata.managed_fields.is_none());
        assert_eq!(slim.0.metadata.name.as_deref(), Some("c"));
    }

    #[test]
    fn lists_and_watch_events_of_slim_objects_parse() {
        let list =
            json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "5"},
            "items": [pod_json(), pod_json()]})
            .to_string();
        let parsed: kube::core::ObjectList<Slim<Pod>> = serde_json::from_str(&list).unwrap();
        assert_eq!(parsed.items.len(), 2);
        assert!(
            parsed
                .items
                .iter()
                .all(|p| p.metadata.managed_fields.is_none())
        );
        let event = json!({"type": "MODIFIED", "object": pod_json()}).to_string();
        let parsed: kube::core::WatchEvent<Slim<Pod>> = serde_json::from_str(&event).unwrap();
        match parsed {
            kube::core::WatchEvent::Modified(p) => {
                assert_eq!(p.metadata.name.as_deref(), Some("p"));
                assert!(p.metadata.managed_fields.is_none());
            }
            other => panic!("unexpected event {other:?}"),
        }
    }

    #[test]
    fn bad_input_is_still_an_error() {
        for text in [
            r#"{"metadata": {"name": 5}}"#,
            r#"{"metadata": {"managedFields": [}}"#,
            r#"{"metadata": []"#,
            "[]",
        ] {
            assert!(serde_json::from_str::<Slim<Pod>>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn json_strings_are_borrowed_unless_escaped() {
        // (JSON, string, borrowed)
        for (json, want, borrowed) in [
            (r#""plain""#, Some("plain"), true),
            (r#""a\"b""#, Some("a\"b"), false),
            (r#""caf\u00e9""#, Some("café"), false),
            ("7", None, false),
            ("null", None, false),
        ] {
            match serde_json::from_str::<JsonStr<'_>>(json) {
                Ok(s) => {
                    assert_eq!(Some(s.as_str()), want, "{json}");
                    assert_eq!(matches!(s.0, Cow::Borrowed(_)), borrowed, "{json}");
                }
                Err(_) => assert_eq!(want, None, "{json}"),
            }
        }
    }
}
