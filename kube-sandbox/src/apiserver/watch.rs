//! WATCH: a stream of newline-delimited JSON events read from the store's history, with
//! selector transitions, bookmarks, initial events, timeouts, and 410 for expired versions.

use crate::apiserver::error::ApiError;
use crate::apiserver::resources::ResourceType;
use crate::apiserver::state::ClusterState;
use crate::apiserver::store::{EventType, Stored};
use crate::validation::selectors::{FieldSelector, LabelSelector};
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What a watch selects and from where it starts.
pub struct WatchRequest {
    /// The resource type.
    pub rt: ResourceType,
    /// The version asked for (objects are rewritten to it).
    pub version: String,
    /// Namespace, or `None` for all namespaces.
    pub namespace: Option<String>,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `resourceVersion`, if set and not "0".
    pub resource_version: Option<u64>,
    /// `sendInitialEvents=true`, or no resourceVersion (both begin with the current state).
    pub initial_events: bool,
    /// Whether the initial events end with a bookmark (`sendInitialEvents=true`).
    pub initial_events_bookmark: bool,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `timeoutSeconds`.
    pub timeout: Option<Duration>,
}

/// Encodes an object at the version a client asked for.
pub fn encode_object(stored: &Stored, rt: &ResourceType, version: &str) -> Bytes {
    if version == rt.storage_version() {
        return stored.json.clone();
    }
    let value = crate::apiserver::conversion::to_version(rt, &stored.value, version);
    Bytes::from(serde_json::to_vec(value.as_ref()).unwrap_or_default())
}

fn event_line(buf: &mut BytesMut, kind: &str, object: &[u8]) {
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(kind.as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(object);
    buf.put_slice(b"}\n");
}

impl WatchRequest {
    fn matches(&self, stored: &Stored) -> bool {
        if let Some(ns) = &self.namespace {
            let obj_ns = stored
                .value
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("");
            if obj_ns != ns {
                return false;
            }
        }
        self.labels.matches(stored.labels())
            && self.fields.matches(|f| {
                crate::validation::selectors::field_value(&self.rt.plural, &stored.value, f)
            })
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(&self.version), "metadata": meta});
        let mut buf = BytesMut::new();
        event_line(&mut buf, "BOOKMARK", obj.to_string().as_bytes());
        buf.freeze()
    }
}

fn gone_event(rv: u64, oldest: u64) -> Bytes {
    let status = ApiError::gone(format!("too old resource version: {rv} ({oldest})")).to_status();
    let mut buf = BytesMut::new();
    event_line(&mut buf, "ERROR", status.to_string().as_bytes());
    buf.freeze()
}

/// Starts a watch; the receiver yields chunks of the response body until the watch ends.
pub fn start(state: Arc<ClusterState>, req: WatchRequest) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        run(state, req, tx).await;
    });
    rx
}

async fn run(state: Arc<ClusterState>, req: WatchRequest, tx: mpsc::Sender<Bytes>) {
    let gr = req.rt.group_resource();
    let mut changes = state.store.subscribe_resource(&gr);
    let deadline = req.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut cursor = match req.resource_version {
        Some(rv) if !req.initial_events => rv,
        _ => {
            let page = state
                .store
                .list(&gr, req.namespace.as_deref(), None, 0, &|s| req.matches(s));
            let mut buf = BytesMut::new();
            for item in &page.items {
                event_line(
                    &mut buf,
                    "ADDED",
                    &encode_object(item, &req.rt, &req.version),
                );
                if buf.len() > 256 * 1024 && tx.send(buf.split().freeze()).await.is_err() {
                    return;
                }
            }
            if !buf.is_empty() && tx.send(buf.freeze()).await.is_err() {
                return;
            }
            if req.initial_events_bookmark && tx.send(req.bookmark(page.rv, true)).await.is_err() {
                return;
            }
            page.rv
        }
    };
    let mut last_bookmark = tokio::time::Instant::now();
    loop {
        match state.store.events_after(cursor, &gr, 1000) {
            Err(oldest) => {
                let _ = tx.send(gone_event(cursor, oldest)).await;
                return;
            }
            Ok((events, last)) => {
                let mut buf = BytesMut::new();
                for event in &events {
                    if let Some(kind) =
                        transition(&req, event.kind, &event.object, event.previous.as_deref())
                    {
                        event_line(
                            &mut buf,
                            kind.as_str(),
                            &encode_object(&event.object, &req.rt, &req.version),
                        );
                    }
                }
                cursor = last;
                if !buf.is_empty() && tx.send(buf.freeze()).await.is_err() {
                    return;
                }
                if events.len() >= 1000 {
                    continue;
                }
            }
        }
        if req.bookmarks && last_bookmark.elapsed() >= state.options.bookmark_interval {
            last_bookmark = tokio::time::Instant::now();
            if tx.send(req.bookmark(cursor, false)).await.is_err() {
                return;
            }
        }
        let wait_bookmark = state.options.bookmark_interval;
        let timeout = tokio::time::sleep(wait_bookmark);
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tx.closed() => return,
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending::<()>().await,
                }
            } => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = timeout => {}
        }
    }
}

/// How an event looks through the watch's selectors: a change that makes an object match is
/// ADDED, one that makes it stop matching is DELETED.
fn transition(
    req: &WatchRequest,
    kind: EventType,
    object: &Stored,
    previous: Option<&Stored>,
) -> Option<EventType> {
    let now = req.matches(object);
    match kind {
        EventType::Added => now.then_some(EventType::Added),
        EventType::Deleted => previous
            .map(|p| req.matches(p))
            .unwrap_or(now)
            .then_some(EventType::Deleted),
        EventType::Modified => {
            let before = previous.is_some_and(|p| req.matches(p));
            match (before, now) {
                (true, true) => Some(EventType::Modified),
                (false, true) => Some(EventType::Added),
                (true, false) => Some(EventType::Deleted),
                (false, false) => None,
            }
        }
    }
}
