//! `fieldValidation`, as kube-apiserver applies it to write bodies: fields the kind does not
//! know are dropped with a `Warning` per field (`Warn`, the default), dropped silently
//! (`Ignore`), or make the request fail with 400 naming them (`Strict`). Built-in kinds are
//! checked against their protobuf schema ([`crate::protobuf::schema`]), custom resources
//! against their CRD schema (the pruning that stores them) and ObjectMeta for `metadata`.

use crate::apiserver::error::ApiError;
use crate::apiserver::resources::ResourceType;
use crate::protobuf;
use crate::validation::schema;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// The `fieldValidation` query parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn about each (the default).
    #[default]
    Warn,
    /// Reject a body with unknown fields.
    Strict,
}

impl FieldValidation {
    /// Reads the query parameter; absent or empty means `Warn`.
    pub fn from_query(query: &HashMap<String, String>) -> Result<Self, ApiError> {
        match query.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: \"{other}\": supported values: \"Ignore\", \"Strict\", \"Warn\""
            ))),
        }
    }
}

/// Which write a body belongs to; server-side apply words its error differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// POST or PUT of a whole object.
    Object,
    /// A merge or strategic merge patch (partial object, `$` directives allowed).
    Patch,
    /// Server-side apply.
    Apply,
}

/// What a body had that its kind does not: paths as kube-apiserver writes them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// Fields the schema does not know (dropped from the body).
    pub unknown: Vec<String>,
    /// Fields a JSON object named twice (the last one is kept).
    pub duplicates: Vec<String>,
}

impl Findings {
    fn texts(&self) -> Vec<String> {
        let unknown = self
            .unknown
            .iter()
            .map(|p| format!("unknown field \"{p}\""));
        let duplicates = self
            .duplicates
            .iter()
            .map(|p| format!("duplicate field \"{p}\""));
        unknown.chain(duplicates).collect()
    }

    fn is_empty(&self) -> bool {
        self.unknown.is_empty() && self.duplicates.is_empty()
    }
}

/// The texts of `Warning` headers (`unknown field "spec.x"`, `duplicate field "a"`): one per
/// field under `Warn`, none otherwise.
pub fn warnings(mode: FieldValidation, findings: &Findings) -> Vec<String> {
    if mode != FieldValidation::Warn {
        return Vec::new();
    }
    findings.texts()
}

/// The fields a JSON body names twice in one object (`spec.replicas`), in document order;
/// none under `Ignore`, where they do not matter, or for a body that is not JSON.
pub fn duplicate_fields(mode: FieldValidation, body: &[u8]) -> Vec<String> {
    if mode == FieldValidation::Ignore {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut path = String::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let scan = DuplicateScan {
        path: &mut path,
        found: &mut found,
    };
    match serde::de::DeserializeSeed::deserialize(scan, &mut de) {
        Ok(()) => found,
        Err(_) => Vec::new(),
    }
}

/// Walks JSON without building it, noting keys seen twice in one object. Every body of a
/// write is scanned, so the path is one buffer grown and cut back, and keys are borrowed
/// from the body where they can be.
struct DuplicateScan<'a> {
    path: &'a mut String,
    found: &'a mut Vec<String>,
}

impl DuplicateScan<'_> {
    fn child(&mut self) -> DuplicateScan<'_> {
        DuplicateScan {
            path: &mut *self.path,
            found: &mut *self.found,
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for DuplicateScan<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// An object key, borrowed from the body unless it has escapes.
struct Key;

impl<'de> serde::de::DeserializeSeed<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(v.to_string()))
    }
}

impl<'de> serde::de::Visitor<'de> for DuplicateScan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let parent = self.path.len();
        let mut i = 0;
        loop {
            self.path.truncate(parent);
            // Writing into a String cannot fail.
            let _ = write!(self.path, "[{i}]");
            if seq.next_element_seed(self.child())?.is_none() {
                self.path.truncate(parent);
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let parent = self.path.len();
        // Objects have few keys: a list beats a hash set here.
        let mut seen: Vec<std::borrow::Cow<'de, str>> = Vec::new();
        while let Some(key) = map.next_key_seed(Key)? {
            self.path.truncate(parent);
            if parent > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            if seen.contains(&key) {
                self.found.push(self.path.clone());
            } else {
                seen.push(key);
            }
            map.next_value_seed(self.child())?;
        }
        self.path.truncate(parent);
        Ok(())
    }
}

/// Finds the unknown fields of `body` (an object, or a patch of one) and drops them; returns
/// them with the `duplicates` [`duplicate_fields`] found ([`warnings`] makes the headers),
/// or the error `Strict` gives.
pub fn enforce(
    rt: &ResourceType,
    version: &str,
    body: &mut Value,
    mode: FieldValidation,
    write: Write,
    duplicates: Vec<String>,
) -> Result<Findings, ApiError> {
    let mut findings = Findings {
        unknown: Vec::new(),
        duplicates,
    };
    if body.is_object() {
        findings.unknown = if rt.custom.is_some() {
            custom_unknown(rt, version, body, write)
        } else if let Some(desc) = protobuf::message_for(&rt.api_version(version), &rt.kind) {
            let schema = protobuf::schema::for_kind(&desc);
            unknown(&schema, body, write)
        } else {
            Vec::new()
        };
        findings.unknown.sort();
    }
    if mode == FieldValidation::Strict && !findings.is_empty() {
        return Err(strict_error(rt, version, body, &findings, write));
    }
    Ok(findings)
}

/// Unknown fields under `schema`, dropped from `body`. Patches keep their `$` directives.
fn unknown(schema: &Value, body: &mut Value, write: Write) -> Vec<String> {
    if write != Write::Patch {
        return kube_kit::fields::drop_unknown_fields(schema, body);
    }
    let found: Vec<String> = kube_kit::fields::unknown_fields(schema, body)
        .into_iter()
        .filter(|p| !p.split(['.', '[']).any(|seg| seg.starts_with('$')))
        .collect();
    for path in &found {
        remove_path(body, path);
    }
    found
}

fn custom_unknown(rt: &ResourceType, version: &str, body: &mut Value, write: Write) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(meta_schema) = protobuf::schema::object_meta()
        && let Some(meta) = body.get_mut("metadata")
    {
        found.extend(
            unknown(&meta_schema, meta, write)
                .into_iter()
                .map(|p| format!("metadata.{p}")),
        );
    }
    let Some(crd_schema) = rt
        .schema(version)
        .or_else(|| rt.schema(rt.storage_version()))
    else {
        return found;
    };
    if write == Write::Patch {
        let mut copy = body.clone();
        let pruned = schema::prune_unknown(crd_schema, &mut copy);
        for path in pruned
            .into_iter()
            .filter(|p| !p.split(['.', '[']).any(|seg| seg.starts_with('$')))
        {
            remove_path(body, &path);
            found.push(path);
        }
    } else {
        found.extend(schema::prune_unknown(crd_schema, body));
    }
    found
}

fn strict_error(
    rt: &ResourceType,
    version: &str,
    body: &Value,
    findings: &Findings,
    write: Write,
) -> ApiError {
    if write == Write::Apply && !findings.unknown.is_empty() {
        let meta = |k: &str| {
            body.pointer(&format!("/metadata/{k}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let name = match meta("namespace") {
            ns if ns.is_empty() => meta("name"),
            ns => format!("{ns}/{}", meta("name")),
        };
        let fields: Vec<String> = findings
            .unknown
            .iter()
            .map(|p| format!(".{p}: field not declared in schema"))
            .collect();
        return ApiError::bad_request(format!(
            "failed to create typed patch object ({name}; {}, Kind={}): {}",
            rt.api_version(version),
            rt.kind,
            fields.join(", ")
        ));
    }
    let fields = findings.texts();
    ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
        fields.join(", "),
        kind = rt.kind,
    ))
}

/// Removes the field at a path as the walks write them (`spec.containers[0].bogus`).
fn remove_path(value: &mut Value, path: &str) {
    let mut segments: Vec<Segment> = Vec::new();
    for part in path.split('.') {
        let (name, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            segments.push(Segment::Key(name));
        }
        for index in indexes.split(']').filter(|s| !s.is_empty()) {
            if let Ok(i) = index.trim_start_matches('[').parse() {
                segments.push(Segment::Index(i));
            }
        }
    }
    let Some((last, parents)) = segments.split_last() else {
        return;
    };
    let mut current = value;
    for segment in parents {
        let next = match segment {
            Segment::Key(k) => current.get_mut(*k),
            Segment::Index(i) => current.get_mut(*i),
        };
        match next {
            Some(next) => current = next,
            None => return,
        }
    }
    if let (Segment::Key(k), Some(map)) = (last, current.as_object_mut()) {
        map.remove(*k);
    }
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_are_removed_where_the_walks_found_them() {
        let cases = [
            (json!({"a": 1, "b": 2}), "a", json!({"b": 2})),
            (
                json!({"spec": {"containers": [{"name": "c"}, {"name": "d", "x": 1}]}}),
                "spec.containers[1].x",
                json!({"spec": {"containers": [{"name": "c"}, {"name": "d"}]}}),
            ),
            (json!({"a": {"b": 1}}), "a.c.d", json!({"a": {"b": 1}})),
        ];
        for (mut value, path, want) in cases {
            remove_path(&mut value, path);
            assert_eq!(value, want, "{path}");
        }
    }

    #[test]
    fn duplicate_json_fields_are_found_with_their_paths() {
        let cases: [(&str, Vec<&str>); 7] = [
            (r#"{"a": 1, "b": 2}"#, vec![]),
            (r#"{"a": 1, "a": 2}"#, vec!["a"]),
            (
                r#"{"spec": {"containers": [{"name": "x", "image": "i", "name": "y"}], "replicas": 1, "replicas": 2}}"#,
                vec!["spec.containers[0].name", "spec.replicas"],
            ),
            (r#"{"a": {"b": 1}, "c": {"b": 2}}"#, vec![]),
            ("not json", vec![]),
            (
                r#"{"items": [{"a": 1}, {"b": {"c": 1, "c": 2}}], "x\u0041": 1, "xA": 2}"#,
                vec!["items[1].b.c", "xA"],
            ),
            (r#"[{"k": 1, "k": 1}]"#, vec!["[0].k"]),
        ];
        for (body, want) in cases {
            assert_eq!(
                duplicate_fields(FieldValidation::Strict, body.as_bytes()),
                want,
                "{body}"
            );
        }
        assert!(duplicate_fields(FieldValidation::Ignore, br#"{"a": 1, "a": 2}"#).is_empty());
    }

    #[test]
    fn the_query_names_the_mode() {
        let q = |v: &str| HashMap::from([("fieldValidation".to_string(), v.to_string())]);
        assert_eq!(
            FieldValidation::from_query(&HashMap::new()).unwrap(),
            FieldValidation::Warn
        );
        assert_eq!(
            FieldValidation::from_query(&q("Strict")).unwrap(),
            FieldValidation::Strict
        );
        assert_eq!(
            FieldValidation::from_query(&q("Ignore")).unwrap(),
            FieldValidation::Ignore
        );
        assert_eq!(FieldValidation::from_query(&q("x")).unwrap_err().code, 400);
    }
}
