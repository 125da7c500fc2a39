//! `application/vnd.kubernetes.protobuf`, as kube-apiserver speaks it for built-in kinds: the
//! `k8s\0` magic, then a `runtime.Unknown` envelope {typeMeta, raw, contentEncoding,
//! contentType} whose `raw` is the kind's message. Request bodies become the JSON the sandbox
//! stores; answers are encoded from that JSON. The schemas are the Kubernetes
//! `generated.proto` files under `kube-sandbox/proto/`, compiled into a descriptor set at
//! build time; custom resources have none, as in kube-apiserver.

pub mod convert;
pub mod schema;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value};
use serde_json::Value as Json;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: &[u8] = b"k8s\0";

const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";
const WATCH_EVENT: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent";

static DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes_descriptor.bin"));
static KINDS: &str = include_str!("../../proto/kinds.tsv");

/// The descriptors of every Kubernetes message, decoded once.
pub fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        // The set is compiled by build.rs from files in the repository: failing to read it
        // back is a build defect, not an input error.
        DescriptorPool::decode(DESCRIPTORS).unwrap_or_else(|e| {
            tracing::error!("the built-in protobuf descriptor set is unreadable: {e}");
            DescriptorPool::new()
        })
    })
}

/// `(apiVersion, kind)` -> message name, from `proto/kinds.tsv`.
fn kinds() -> &'static HashMap<(String, String), String> {
    static KINDS_BY_NAME: OnceLock<HashMap<(String, String), String>> = OnceLock::new();
    KINDS_BY_NAME.get_or_init(|| {
        KINDS
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|line| {
                let mut cols = line.split('\t');
                let (group, version, kind, message) =
                    (cols.next()?, cols.next()?, cols.next()?, cols.next()?);
                let api_version = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                Some(((api_version, kind.to_string()), message.to_string()))
            })
            .collect()
    })
}

/// The message of a built-in kind, `None` for kinds without one (custom resources).
pub fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let name = kinds().get(&(api_version.to_string(), kind.to_string()))?;
    pool().get_message_by_name(name)
}

/// Whether objects of this group/version/kind have a protobuf form.
pub fn supports(group: &str, version: &str, kind: &str) -> bool {
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    message_for(&api_version, kind).is_some()
}

/// A body that cannot be decoded (the server answers 400), or an object that cannot be
/// encoded (500).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProtobufError(pub String);

fn bad(message: impl Into<String>) -> ProtobufError {
    ProtobufError(message.into())
}

/// Decodes a protobuf request body into the object's JSON, `apiVersion` and `kind` included.
pub fn decode_object(body: &[u8]) -> Result<Json, ProtobufError> {
    let rest = body.strip_prefix(MAGIC).ok_or_else(|| {
        bad("the object provided is unrecognized or malformed protobuf: the body does not start with the protobuf magic prefix")
    })?;
    let unknown_desc = pool()
        .get_message_by_name(UNKNOWN)
        .ok_or_else(|| bad("no runtime.Unknown descriptor"))?;
    let envelope = DynamicMessage::decode(unknown_desc, rest).map_err(|e| {
        bad(format!(
            "the object provided is unrecognized or malformed protobuf: {e}"
        ))
    })?;
    let type_meta = match envelope.get_field_by_name("typeMeta").as_deref() {
        Some(Value::Message(m)) => m.clone(),
        _ => return Err(bad("the protobuf envelope has no typeMeta")),
    };
    let text = |m: &DynamicMessage, name: &str| {
        m.get_field_by_name(name)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let api_version = text(&type_meta, "apiVersion");
    let kind = text(&type_meta, "kind");
    let encoding = text(&envelope, "contentEncoding");
    if !encoding.is_empty() {
        return Err(bad(format!(
            "the protobuf envelope's content encoding {encoding:?} is not supported"
        )));
    }
    if kind.is_empty() {
        return Err(bad("Object 'Kind' is missing in the protobuf envelope"));
    }
    let desc = message_for(&api_version, &kind).ok_or_else(|| {
        bad(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30\""
        ))
    })?;
    let raw = match envelope.get_field_by_name("raw").as_deref() {
        Some(Value::Bytes(b)) => b.clone(),
        _ => Bytes::new(),
    };
    let msg = DynamicMessage::decode(desc, raw.as_ref()).map_err(|e| {
        bad(format!(
            "the object provided is unrecognized or malformed protobuf: {kind}: {e}"
        ))
    })?;
    let body = convert::message_to_json(&msg)
        .map_err(|e| bad(format!("the object provided cannot be read as {kind}: {e}")))?;
    let mut out = serde_json::Map::new();
    out.insert("apiVersion".into(), Json::String(api_version));
    out.insert("kind".into(), Json::String(kind));
    if let Json::Object(fields) = body {
        out.extend(fields);
    }
    Ok(Json::Object(out))
}

/// Encodes an object (its JSON carries `apiVersion` and `kind`) as a protobuf body; `None`
/// when the kind has no protobuf form.
pub fn encode_object(value: &Json) -> Result<Option<Bytes>, ProtobufError> {
    let api_version = value.get("apiVersion").and_then(Json::as_str).unwrap_or("");
    let kind = value.get("kind").and_then(Json::as_str).unwrap_or("");
    let Some(desc) = message_for(api_version, kind) else {
        return Ok(None);
    };
    let msg = convert::json_to_message(&desc, value)
        .map_err(|e| bad(format!("cannot encode {kind} as protobuf: {e}")))?;
    Ok(Some(envelope(api_version, kind, &msg.encode_to_vec())?))
}

/// `k8s\0` + `runtime.Unknown{typeMeta, raw}`.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Result<Bytes, ProtobufError> {
    let unknown_desc = pool()
        .get_message_by_name(UNKNOWN)
        .ok_or_else(|| bad("no runtime.Unknown descriptor"))?;
    let type_meta_json = serde_json::json!({"apiVersion": api_version, "kind": kind});
    let mut msg = DynamicMessage::new(unknown_desc.clone());
    let type_field = unknown_desc
        .get_field_by_name("typeMeta")
        .ok_or_else(|| bad("runtime.Unknown has no typeMeta"))?;
    if let prost_reflect::Kind::Message(type_desc) = type_field.kind() {
        let type_meta = convert::json_to_message(&type_desc, &type_meta_json)
            .map_err(|e| bad(e.to_string()))?;
        msg.set_field(&type_field, Value::Message(type_meta));
    }
    msg.set_field_by_name("raw", Value::Bytes(Bytes::copy_from_slice(raw)));
    msg.set_field_by_name("contentEncoding", Value::String(String::new()));
    msg.set_field_by_name("contentType", Value::String(String::new()));
    let mut out = BytesMut::with_capacity(MAGIC.len() + msg.encoded_len());
    out.put_slice(MAGIC);
    msg.encode(&mut out).map_err(|e| bad(e.to_string()))?;
    Ok(out.freeze())
}

/// One frame of a protobuf watch stream: a 4-byte big-endian length, then a
/// `meta.v1.WatchEvent` whose object is an enveloped object.
pub fn watch_frame(event: &Json) -> Result<Option<Bytes>, ProtobufError> {
    let kind = event.get("type").and_then(Json::as_str).unwrap_or("");
    let Some(object) = event.get("object") else {
        return Ok(None);
    };
    let Some(raw) = encode_object(object)? else {
        return Ok(None);
    };
    let desc = pool()
        .get_message_by_name(WATCH_EVENT)
        .ok_or_else(|| bad("no WatchEvent descriptor"))?;
    let mut msg = DynamicMessage::new(desc.clone());
    msg.set_field_by_name("type", Value::String(kind.to_string()));
    let object_field = desc
        .get_field_by_name("object")
        .ok_or_else(|| bad("WatchEvent has no object"))?;
    if let prost_reflect::Kind::Message(raw_desc) = object_field.kind() {
        let mut raw_ext = DynamicMessage::new(raw_desc);
        raw_ext.set_field_by_name("raw", Value::Bytes(raw));
        msg.set_field(&object_field, Value::Message(raw_ext));
    }
    let body = msg.encode_to_vec();
    let len = u32::try_from(body.len()).map_err(|_| bad("watch event too large"))?;
    let mut out = BytesMut::with_capacity(4 + body.len());
    out.put_u32(len);
    out.put_slice(&body);
    Ok(Some(out.freeze()))
}

/// Reads one frame of a protobuf watch stream (without its length prefix) back into the JSON
/// event `{"type": ..., "object": ...}`, as a client would.
pub fn decode_watch_event(frame: &[u8]) -> Result<Json, ProtobufError> {
    let desc = pool()
        .get_message_by_name(WATCH_EVENT)
        .ok_or_else(|| bad("no WatchEvent descriptor"))?;
    let event = DynamicMessage::decode(desc, frame)
        .map_err(|e| bad(format!("malformed watch event: {e}")))?;
    let kind = event
        .get_field_by_name("type")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let raw = match event.get_field_by_name("object").as_deref() {
        Some(Value::Message(m)) => match m.get_field_by_name("raw").as_deref() {
            Some(Value::Bytes(b)) => b.clone(),
            _ => Bytes::new(),
        },
        _ => Bytes::new(),
    };
    Ok(serde_json::json!({"type": kind, "object": decode_object(&raw)?}))
}

/// What a client's `Accept` header lets the server answer with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// JSON is acceptable (or nothing is said): the sandbox's usual answer.
    Json,
    /// Only protobuf is acceptable.
    Protobuf,
}

/// Reads an `Accept` header: protobuf only when no JSON-compatible type is listed, as a
/// server that prefers JSON may answer (kubectl lists both and reads either).
pub fn negotiate(accept: Option<&str>) -> Answer {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Answer::Json;
    };
    let mut protobuf = false;
    for media in accept.split(',') {
        let essence = media
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json" | "application/*" | "*/*" | "*" | "application/yaml" => {
                return Answer::Json;
            }
            MEDIA_TYPE => protobuf = true,
            _ => {}
        }
    }
    if protobuf {
        Answer::Protobuf
    } else {
        Answer::Json
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_headers_choose_the_answer() {
        let cases = [
            (None, Answer::Json),
            (Some(""), Answer::Json),
            (Some("application/json"), Answer::Json),
            (
                Some("application/vnd.kubernetes.protobuf, application/json"),
                Answer::Json,
            ),
            (
                Some("application/vnd.kubernetes.protobuf"),
                Answer::Protobuf,
            ),
            (
                Some("application/vnd.kubernetes.protobuf;stream=watch"),
                Answer::Protobuf,
            ),
            (
                Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
                Answer::Json,
            ),
            (Some("*/*"), Answer::Json),
            (Some("text/plain"), Answer::Json),
        ];
        for (accept, want) in cases {
            assert_eq!(negotiate(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn objects_round_trip_through_the_envelope() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": {"a": "b"}});
        let body = encode_object(&cm).unwrap().unwrap();
        assert!(body.starts_with(MAGIC));
        assert_eq!(decode_object(&body).unwrap(), cm);
        let custom = json!({"apiVersion": "example.com/v1", "kind": "Widget"});
        assert!(encode_object(&custom).unwrap().is_none());
    }

    #[test]
    fn bad_bodies_are_bad_requests() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}});
        let good = encode_object(&cm).unwrap().unwrap();
        let unknown_kind = envelope("v1", "Gizmo", b"").unwrap();
        let mut garbage = MAGIC.to_vec();
        garbage.extend_from_slice(&[0xff; 16]);
        let cases: [(&[u8], &str); 5] = [
            (b"", "magic"),
            (b"{\"kind\":\"ConfigMap\"}", "magic"),
            (&good[..good.len() - 3], "malformed protobuf"),
            (&garbage, "malformed protobuf"),
            (&unknown_kind, "no kind \"Gizmo\" is registered"),
        ];
        for (body, message) in cases {
            let err = decode_object(body).unwrap_err();
            assert!(err.0.contains(message), "{}", err.0);
        }
    }

    #[test]
    fn every_listed_kind_has_a_message() {
        for message in kinds().values() {
            assert!(pool().get_message_by_name(message).is_some(), "{message}");
        }
        assert!(supports("apps", "v1", "Deployment"));
        assert!(supports("", "v1", "Status"));
        assert!(!supports("example.com", "v1", "Widget"));
    }
}
