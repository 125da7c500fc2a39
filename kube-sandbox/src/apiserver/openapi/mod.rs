//! `/openapi/v2` and `/openapi/v3` as kube-apiserver serves them (kube-openapi's `handler` and
//! `handler3`): the recorded v1.36 documents of the built-in group versions the sandbox
//! serves (only their served paths), plus every CRD's definitions and paths. The v3 index
//! lists each group version with `?hash=<ETag>`; a request with the current hash is cacheable
//! for a year, one with another hash is redirected (301) to the current one. JSON only: a
//! client accepting only protobuf gets 406.

pub mod builtin;
pub mod crd;

use crate::apiserver::resources::ResourceType;
use bytes::Bytes;
use crd::Form;
use http::{HeaderValue, Response, StatusCode, header};
use ring::digest;
use serde_json::{Map, Value, json};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

/// A serialized document and its ETag (upper-case hex SHA-512, as kube-openapi computes it).
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The JSON body.
    pub body: Bytes,
    /// The ETag, unquoted.
    pub etag: String,
}

/// Upper-case hex SHA-512 of a body: the ETag kube-openapi and aggregated discovery use.
pub fn etag_of(body: &[u8]) -> String {
    digest::digest(&digest::SHA512, body)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

impl Rendered {
    /// Serializes a document and computes its ETag.
    pub fn of(value: &Value) -> Rendered {
        let body = Bytes::from(value.to_string());
        let etag = etag_of(&body);
        Rendered { body, etag }
    }
}

/// The OpenAPI documents for one set of served types.
pub struct Documents {
    types: Vec<ResourceType>,
    v3: BTreeMap<String, Rendered>,
    index: Rendered,
    v2: OnceLock<Rendered>,
}

impl Documents {
    fn build(types: Vec<ResourceType>) -> Documents {
        // Group versions are rendered once per content and shared: the built-in ones do not
        // change when a CRD comes or goes.
        static RENDERED: Mutex<Vec<((String, u64), Rendered)>> = Mutex::new(Vec::new());
        const KEPT: usize = 128;
        let mut v3 = BTreeMap::new();
        for (group, version) in served_group_versions(&types) {
            let key = builtin::gv_key(&group, &version);
            let in_group: Vec<ResourceType> =
                types.iter().filter(|t| t.group == group).cloned().collect();
            let id = (key.clone(), fingerprint(&in_group));
            let cached = {
                let cache = RENDERED.lock().unwrap_or_else(|p| p.into_inner());
                cache.iter().find(|(k, _)| *k == id).map(|(_, r)| r.clone())
            };
            let rendered = match cached {
                Some(r) => r,
                None => {
                    let Some(doc) = v3_document(&group, &version, &types) else {
                        continue;
                    };
                    let r = Rendered::of(&doc);
                    let mut cache = RENDERED.lock().unwrap_or_else(|p| p.into_inner());
                    if cache.len() >= KEPT {
                        cache.remove(0);
                    }
                    cache.push((id, r.clone()));
                    r
                }
            };
            v3.insert(key, rendered);
        }
        let paths: Map<String, Value> = v3
            .iter()
            .map(|(key, doc)| {
                (
                    key.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", doc.etag)}),
                )
            })
            .collect();
        let index = Rendered::of(&json!({ "paths": paths }));
        Documents {
            types,
            v3,
            index,
            v2: OnceLock::new(),
        }
    }

    /// `/openapi/v3`.
    pub fn index(&self) -> &Rendered {
        &self.index
    }

    /// `/openapi/v3/<key>` (`api/v1`, `apis/apps/v1`, ...).
    pub fn v3(&self, key: &str) -> Option<&Rendered> {
        self.v3.get(key)
    }

    /// `/openapi/v2`, built on first use.
    pub fn v2(&self) -> &Rendered {
        self.v2
            .get_or_init(|| Rendered::of(&v2_document(&self.types)))
    }
}

/// Identity of what the documents depend on: the served types and CRD schemas.
fn fingerprint(types: &[ResourceType]) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut keys: Vec<String> = types
        .iter()
        .map(|t| {
            let custom = t
                .custom
                .as_ref()
                .map(|c| Value::Array(c.schemas.iter().map(|(v, s)| json!([v, s])).collect()))
                .unwrap_or(Value::Null);
            format!(
                "{}|{:?}|{}|{}|{}|{}|{:?}|{:?}|{custom}",
                t.group,
                t.versions,
                t.plural,
                t.kind,
                t.list_kind,
                t.namespaced,
                t.subresources,
                t.verbs
            )
        })
        .collect();
    keys.sort();
    keys.hash(&mut hasher);
    hasher.finish()
}

/// The documents for these types, shared by every cluster serving the same ones.
pub fn documents(types: Vec<ResourceType>) -> Arc<Documents> {
    static CACHE: Mutex<Vec<(u64, Arc<Documents>)>> = Mutex::new(Vec::new());
    const KEPT: usize = 8;
    let key = fingerprint(&types);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, docs)) = cache.iter().find(|(k, _)| *k == key) {
        return docs.clone();
    }
    let docs = Arc::new(Documents::build(types));
    if cache.len() >= KEPT {
        cache.remove(0);
    }
    cache.push((key, docs.clone()));
    docs
}

fn served_group_versions(types: &[ResourceType]) -> BTreeSet<(String, String)> {
    types
        .iter()
        .flat_map(|t| t.versions.iter().map(|v| (t.group.clone(), v.clone())))
        .collect()
}

/// Copies from `source` the definitions `doc` refers to and lacks, transitively.
fn complete_references(doc: &mut Value, pointer: &str, source: &Map<String, Value>) {
    loop {
        let mut wanted = Vec::new();
        crd::references(doc, &mut wanted);
        let Some(defs) = doc.pointer_mut(pointer).and_then(Value::as_object_mut) else {
            return;
        };
        let missing: Vec<String> = wanted
            .into_iter()
            .filter(|name| !defs.contains_key(name) && source.contains_key(name))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if missing.is_empty() {
            return;
        }
        for name in missing {
            if let Some(def) = source.get(&name) {
                defs.insert(name, def.clone());
            }
        }
    }
}

fn insert_all(doc: &mut Value, pointer: &str, entries: Vec<(String, Value)>) {
    if let Some(map) = doc.pointer_mut(pointer).and_then(Value::as_object_mut) {
        for (k, v) in entries {
            map.insert(k, v);
        }
    }
}

/// One served group version's v3 document: the recorded one cut down to the served paths,
/// plus its CRDs; `None` for a group version with neither.
pub fn v3_document(group: &str, version: &str, types: &[ResourceType]) -> Option<Value> {
    let recorded = builtin::v3_documents();
    let template = recorded.get("apis/apps/v1")?;
    let key = builtin::gv_key(group, version);
    let customs: Vec<&ResourceType> = types
        .iter()
        .filter(|t| {
            t.custom.is_some() && t.group == group && t.versions.iter().any(|v| v == version)
        })
        .collect();
    let mut doc = match recorded.get(&key) {
        Some(doc) => builtin::filtered(doc, types),
        None if !customs.is_empty() => json!({
            "openapi": "3.0.0",
            "info": template["info"],
            "paths": {},
            "components": {"schemas": {}, "securitySchemes": template.pointer("/components/securitySchemes")},
        }),
        None => return None,
    };
    for rt in customs {
        insert_all(&mut doc, "/paths", crd::paths(rt, version, template));
        insert_all(
            &mut doc,
            "/components/schemas",
            crd::definitions(rt, version, Form::V3),
        );
    }
    if let Some(schemas) = template
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        complete_references(&mut doc, "/components/schemas", schemas);
    }
    Some(doc)
}

/// Every served group version's v3 document, by index key.
pub fn v3_documents(types: &[ResourceType]) -> BTreeMap<String, Value> {
    served_group_versions(types)
        .into_iter()
        .filter_map(|(group, version)| {
            v3_document(&group, &version, types).map(|doc| (builtin::gv_key(&group, &version), doc))
        })
        .collect()
}

/// The v2 document: the recorded one's served paths, plus every CRD version.
pub fn v2_document(types: &[ResourceType]) -> Value {
    let recorded = builtin::v2_document();
    let mut doc = builtin::filtered(recorded, types);
    for rt in types.iter().filter(|t| t.custom.is_some()) {
        for version in &rt.versions {
            insert_all(&mut doc, "/paths", crd::paths(rt, version, recorded));
            insert_all(
                &mut doc,
                "/definitions",
                crd::definitions(rt, version, Form::V2),
            );
        }
    }
    doc
}

/// Whether an Accept header lets the server answer JSON: kube-openapi walks the clauses and
/// answers the first it can produce; the sandbox produces no protobuf.
pub fn accepts_json(accept: Option<&str>) -> bool {
    let accept = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    accept.split(',').any(|clause| {
        let media = clause.split(';').next().unwrap_or("").trim();
        matches!(media, "application/json" | "application/*" | "*/*")
    })
}

/// The request parts `serve` reads.
pub struct OpenApiRequest<'a> {
    /// The path after `/openapi/`: `v2`, `v3` or `v3/<key>`.
    pub path: &'a str,
    /// The `hash` query parameter.
    pub hash: Option<&'a str>,
    /// The Accept header.
    pub accept: Option<&'a str>,
    /// The If-None-Match header.
    pub if_none_match: Option<&'a str>,
}

fn respond(status: StatusCode, body: Bytes) -> Response<Bytes> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

fn set(response: &mut Response<Bytes>, name: header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}

/// A document with its ETag, `304` when the client already has it.
fn document(rendered: &Rendered, if_none_match: Option<&str>) -> Response<Bytes> {
    let quoted = format!("\"{}\"", rendered.etag);
    let mut response = if if_none_match.is_some_and(|tags| {
        tags.split(',')
            .any(|t| t.trim() == quoted || t.trim() == "*")
    }) {
        respond(StatusCode::NOT_MODIFIED, Bytes::new())
    } else {
        respond(StatusCode::OK, rendered.body.clone())
    };
    set(&mut response, header::CONTENT_TYPE, "application/json");
    set(&mut response, header::ETAG, &quoted);
    response
}

/// Answers a request under `/openapi/`.
pub fn serve(types: Vec<ResourceType>, request: &OpenApiRequest<'_>) -> Response<Bytes> {
    let not_found = || {
        let mut r = respond(
            StatusCode::NOT_FOUND,
            Bytes::from_static(b"404 page not found\n"),
        );
        set(&mut r, header::CONTENT_TYPE, "text/plain; charset=utf-8");
        r
    };
    let not_acceptable = || respond(StatusCode::NOT_ACCEPTABLE, Bytes::new());
    match request.path.trim_end_matches('/') {
        "v2" => {
            if !accepts_json(request.accept) {
                return not_acceptable();
            }
            let docs = documents(types);
            let mut response = document(docs.v2(), request.if_none_match);
            set(&mut response, header::VARY, "Accept");
            response
        }
        "v3" => document(documents(types).index(), request.if_none_match),
        other => {
            let Some(key) = other.strip_prefix("v3/") else {
                return not_found();
            };
            let docs = documents(types);
            let Some(rendered) = docs.v3(key) else {
                return not_found();
            };
            if !accepts_json(request.accept) {
                let mut r = not_acceptable();
                set(&mut r, header::VARY, "Accept");
                return r;
            }
            if let Some(hash) = request.hash.filter(|h| !h.is_empty()) {
                if hash != rendered.etag {
                    let mut r = respond(StatusCode::MOVED_PERMANENTLY, Bytes::new());
                    set(
                        &mut r,
                        header::LOCATION,
                        &format!("/openapi/v3/{key}?hash={}", rendered.etag),
                    );
                    return r;
                }
                let mut response = document(rendered, request.if_none_match);
                set(&mut response, header::VARY, "Accept");
                set(&mut response, header::CACHE_CONTROL, "public, immutable");
                let expires = jiff::Timestamp::now()
                    .checked_add(jiff::SignedDuration::from_hours(24 * 365))
                    .unwrap_or_else(|_| jiff::Timestamp::now());
                set(
                    &mut response,
                    header::EXPIRES,
                    &expires.strftime("%a, %d %b %Y %H:%M:%S UTC").to_string(),
                );
                return response;
            }
            let mut response = document(rendered, request.if_none_match);
            set(&mut response, header::VARY, "Accept");
            response
        }
    }
}

#[cfg(test)]
mod tests;
