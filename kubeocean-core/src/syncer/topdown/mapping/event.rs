//! Worker Events about a physical pod or claim -> Events about its virtual object
//! **(ours; Liqo reflects Events the same way)**: `kubectl describe` in the computing
//! cluster then shows the worker's `Failed`, `BackOff`, `FailedMount`, `Pulling`...
//!
//! Counted as kube counts: Events alike (same type, reason, source and message once the
//! physical names are replaced by the virtual ones) are one Event whose `count` is the sum of
//! theirs, as client-go's `EventCorrelator` aggregates (kubernetes
//! `staging/src/k8s.io/client-go/tools/record/events_cache.go`, `EventAggregator` and
//! `eventObserve`), so a thousand repeats are one Event, not a thousand. The name of a
//! reflected Event is a hash of what makes it alike, so a restarted syncer finds and updates
//! the one it wrote. At most [`MAX_EVENTS_PER_OBJECT`] are kept per object (the most
//! recent), as client-go's spam filter caps the burst per object (`EventSourceObjectSpamFilter`,
//! burst 25).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;

use crate::labels;

/// At most this many reflected Events per virtual object (client-go's spam filter burst).
pub const MAX_EVENTS_PER_OBJECT: usize = 25;
/// `reportingComponent` of reflected Events.
pub const REFLECTING_COMPONENT: &str = "kubeocean.io/syncer";
/// Longest Event message kube-apiserver accepts (`validation.go`: 1 KiB for `note` of
/// events.k8s.io/v1; core/v1 messages are cut the same way by client-go's recorder).
const MAX_MESSAGE_BYTES: usize = 1024;

/// The physical object the worker Events are about, and its virtual object.
#[derive(Clone, Debug, PartialEq)]
pub struct ReflectedObject {
    /// `Pod` or `PersistentVolumeClaim`.
    pub kind: String,
    /// The physical object's namespace (the mount namespace).
    pub physical_namespace: String,
    /// The physical object's name.
    pub physical_name: String,
    /// The physical object's UID: Events of an earlier object of the same name are not its.
    pub physical_uid: String,
    /// The virtual object the Events are reflected onto.
    pub virtual_ref: ObjectReference,
    /// Physical node name -> virtual node name, for messages that name the node.
    pub nodes: BTreeMap<String, String>,
}

impl ReflectedObject {
    fn virtual_namespace(&self) -> &str {
        self.virtual_ref.namespace.as_deref().unwrap_or_default()
    }

    fn virtual_name(&self) -> &str {
        self.virtual_ref.name.as_deref().unwrap_or_default()
    }

    /// Whether a worker Event is about this physical object (this incarnation of it).
    pub fn is_about(&self, event: &Event) -> bool {
        let o = &event.involved_object;
        o.kind.as_deref() == Some(self.kind.as_str())
            && o.namespace.as_deref() == Some(self.physical_namespace.as_str())
            && o.name.as_deref() == Some(self.physical_name.as_str())
            && o.uid.as_deref().is_none_or(|uid| uid == self.physical_uid)
    }

    /// `message` with the physical names replaced by the virtual ones.
    pub fn virtual_message(&self, message: &str) -> String {
        let mut out = message.replace(
            &format!("{}/{}", self.physical_namespace, self.physical_name),
            &format!("{}/{}", self.virtual_namespace(), self.virtual_name()),
        );
        out = out.replace(&self.physical_name, self.virtual_name());
        for (physical, virtual_node) in &self.nodes {
            out = replace_word(&out, physical, virtual_node);
        }
        out
    }
}

/// Replaces `from` where it stands as a whole name (not inside a longer name).
fn replace_word(text: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        return text.to_owned();
    }
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let mut after = rest[at + from.len()..].chars();
        // A '.' continues a name only when a name character follows (else it ends a sentence).
        let after_is_name = match after.next() {
            Some('.') => after.next().is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => name_char(c),
            None => false,
        };
        out.push_str(&rest[..at]);
        if before.is_some_and(name_char) || after_is_name {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

/// How many times a worker Event happened: `count`, or its `series.count`, at least once.
fn occurrences(event: &Event) -> i32 {
    let series = event.series.as_ref().and_then(|s| s.count);
    event.count.max(series).unwrap_or(1).max(1)
}

fn first_seen(event: &Event) -> Option<Time> {
    event
        .first_timestamp
        .clone()
        .or_else(|| event.event_time.as_ref().map(|t| Time(t.0)))
        .or_else(|| event.last_timestamp.clone())
}

fn last_seen(event: &Event) -> Option<Time> {
    let series = event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref())
        .map(|t| Time(t.0));
    [
        event.last_timestamp.clone(),
        series,
        event.event_time.as_ref().map(|t| Time(t.0)),
        event.first_timestamp.clone(),
    ]
    .into_iter()
    .flatten()
    .max_by_key(|t| t.0)
}

/// What makes two worker Events alike.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Alike {
    type_: String,
    reason: String,
    component: String,
    message: String,
}

/// Name of the reflected Event for `alike` about `object`: `<virtual name>.<16 hex digits>`.
fn event_name(object: &ReflectedObject, alike: &Alike) -> String {
    let key = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        object.virtual_ref.uid.as_deref().unwrap_or_default(),
        object.kind,
        alike.type_,
        alike.reason,
        alike.component,
        alike.message
    );
    let digest = ring::digest::digest(&ring::digest::SHA256, key.as_bytes());
    let hex: String = digest
        .as_ref()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    // Event names are DNS subdomains (at most 253 characters).
    let base: String = object.virtual_name().chars().take(253 - 17).collect();
    format!("{base}.{hex}")
}

fn cut(message: &str) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message.to_owned();
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    message[..end].to_owned()
}

/// The Events about `object`'s virtual object that reflect `worker_events` (those about
/// other objects are ignored): one per set of alike Events, counted, the most recent
/// [`MAX_EVENTS_PER_OBJECT`], ordered by name.
pub fn reflected_events(object: &ReflectedObject, worker_events: &[&Event]) -> Vec<Event> {
    let mut groups: BTreeMap<Alike, Vec<&Event>> = BTreeMap::new();
    for event in worker_events.iter().copied().filter(|e| object.is_about(e)) {
        let alike = Alike {
            type_: event.type_.clone().unwrap_or_else(|| "Normal".to_owned()),
            reason: event.reason.clone().unwrap_or_default(),
            component: event
                .source
                .as_ref()
                .and_then(|s| s.component.clone())
                .or_else(|| event.reporting_component.clone())
                .unwrap_or_default(),
            message: cut(&object.virtual_message(event.message.as_deref().unwrap_or_default())),
        };
        groups.entry(alike).or_default().push(event);
    }
    let mut events: Vec<Event> = groups
        .into_iter()
        .map(|(alike, group)| {
            let count: i32 = group
                .iter()
                .map(|e| occurrences(e))
                .fold(0i32, i32::saturating_add);
            let first = group
                .iter()
                .filter_map(|e| first_seen(e))
                .min_by_key(|t| t.0);
            let last = group
                .iter()
                .filter_map(|e| last_seen(e))
                .max_by_key(|t| t.0);
            let host = group
                .iter()
                .find_map(|e| e.source.as_ref().and_then(|s| s.host.clone()))
                .map(|h| object.nodes.get(&h).cloned().unwrap_or(h));
            Event {
                metadata: ObjectMeta {
                    name: Some(event_name(object, &alike)),
                    namespace: Some(object.virtual_namespace().to_owned()),
                    labels: Some(BTreeMap::from([(
                        labels::MANAGED_BY.to_owned(),
                        labels::MANAGED_BY_VALUE.to_owned(),
                    )])),
                    ..ObjectMeta::default()
                },
                involved_object: object.virtual_ref.clone(),
                type_: Some(alike.type_),
                reason: Some(alike.reason),
                message: Some(alike.message),
                source: Some(EventSource {
                    component: Some(alike.component).filter(|c| !c.is_empty()),
                    host,
                }),
                reporting_component: Some(REFLECTING_COMPONENT.to_owned()),
                reporting_instance: Some(object.physical_namespace.clone()),
                count: Some(count),
                first_timestamp: first.clone(),
                last_timestamp: last.or(first),
                ..Event::default()
            }
        })
        .collect();
    if events.len() > MAX_EVENTS_PER_OBJECT {
        events.sort_by(|a, b| {
            let t = |e: &Event| e.last_timestamp.as_ref().map(|t| t.0);
            t(b).cmp(&t(a))
        });
        events.truncate(MAX_EVENTS_PER_OBJECT);
    }
    events.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    events
}

/// Whether a stored reflected Event must be rewritten to say what `desired` says.
pub fn event_differs(stored: &Event, desired: &Event) -> bool {
    stored.count != desired.count
        || stored.message != desired.message
        || stored.last_timestamp != desired.last_timestamp
        || stored.first_timestamp != desired.first_timestamp
        || stored.involved_object != desired.involved_object
        || stored.type_ != desired.type_
        || stored.reason != desired.reason
}

/// Kinds whose worker Events are reflected.
const KINDS: [&str; 2] = ["Pod", "PersistentVolumeClaim"];

/// The queue key of the physical object a worker Event is about, when it is in
/// `mount_namespace` and of a reflected kind.
pub fn event_key(event: &Event, mount_namespace: &str) -> Option<String> {
    let o = &event.involved_object;
    let kind = o.kind.as_deref()?;
    (o.namespace.as_deref() == Some(mount_namespace) && KINDS.contains(&kind))
        .then(|| format!("{kind}/{}", o.name.as_deref().unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object() -> ReflectedObject {
        ReflectedObject {
            kind: "Pod".to_owned(),
            physical_namespace: "mount".to_owned(),
            physical_name: "web-0-abc123".to_owned(),
            physical_uid: "p-uid".to_owned(),
            virtual_ref: serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Pod", "namespace": "shop", "name": "web-0",
                "uid": "v-uid"}))
            .unwrap(),
            nodes: BTreeMap::from([("n1".to_owned(), "vnode-w1-n1".to_owned())]),
        }
    }

    fn worker_event(name: &str, reason: &str, message: &str, count: i32, last: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "mount"},
            "involvedObject": {"kind": "Pod", "namespace": "mount", "name": "web-0-abc123",
                "uid": "p-uid", "apiVersion": "v1"},
            "type": if reason == "Pulling" { "Normal" } else { "Warning" },
            "reason": reason, "message": message, "count": count,
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": last,
        }))
        .unwrap()
    }

    #[test]
    fn alike_events_are_one_counted_event() {
        let events: Vec<Event> = (0..1000)
            .map(|i| {
                worker_event(
                    &format!("e{i}"),
                    "BackOff",
                    "Back-off pulling image \"nope:1\"",
                    1,
                    &format!("2026-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60),
                )
            })
            .collect();
        let refs: Vec<&Event> = events.iter().collect();
        let out = reflected_events(&object(), &refs);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].count, Some(1000));
        assert_eq!(out[0].involved_object.name.as_deref(), Some("web-0"));
        assert_eq!(out[0].metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(
            out[0].last_timestamp.as_ref().unwrap().0.to_string(),
            "2026-01-01T00:16:39Z"
        );
        // Deterministic: the same name from the same input.
        assert_eq!(
            reflected_events(&object(), &refs)[0].metadata.name,
            out[0].metadata.name
        );
    }

    #[test]
    fn messages_name_virtual_objects_and_others_are_ignored() {
        let mut other = worker_event("x", "Failed", "other pod", 1, "2026-01-01T00:00:01Z");
        other.involved_object.name = Some("not-ours".to_owned());
        let mut old = worker_event("y", "Failed", "old pod", 1, "2026-01-01T00:00:01Z");
        old.involved_object.uid = Some("earlier".to_owned());
        let scheduled = worker_event(
            "s",
            "Scheduled",
            "Successfully assigned mount/web-0-abc123 to n1",
            1,
            "2026-01-01T00:00:01Z",
        );
        let failed = worker_event(
            "f",
            "Failed",
            "Error: ErrImagePull on n1.",
            3,
            "2026-01-01T00:00:02Z",
        );
        let out = reflected_events(&object(), &[&other, &old, &scheduled, &failed]);
        let messages: Vec<&str> = out.iter().map(|e| e.message.as_deref().unwrap()).collect();
        assert_eq!(out.len(), 2, "{messages:?}");
        assert!(messages.contains(&"Successfully assigned shop/web-0 to vnode-w1-n1"));
        assert!(messages.contains(&"Error: ErrImagePull on vnode-w1-n1."));
        let failed = out
            .iter()
            .find(|e| e.reason.as_deref() == Some("Failed"))
            .unwrap();
        assert_eq!(failed.count, Some(3));
        assert_eq!(
            failed.source.as_ref().unwrap().host.as_deref(),
            Some("vnode-w1-n1")
        );
    }

    #[test]
    fn replace_word_table() {
        for (text, from, to, want) in [
            ("on n1", "n1", "v", "on v"),
            ("on n10", "n1", "v", "on n10"),
            ("xn1 n1.", "n1", "v", "xn1 v."),
            ("n1.example", "n1", "v", "n1.example"),
        ] {
            assert_eq!(replace_word(text, from, to), want, "{text}");
        }
    }

    #[test]
    fn at_most_the_most_recent_events_per_object() {
        let events: Vec<Event> = (0..40)
            .map(|i| {
                worker_event(
                    &format!("e{i}"),
                    &format!("Reason{i}"),
                    "m",
                    1,
                    &format!("2026-01-01T00:00:{i:02}Z"),
                )
            })
            .collect();
        let refs: Vec<&Event> = events.iter().collect();
        let out = reflected_events(&object(), &refs);
        assert_eq!(out.len(), MAX_EVENTS_PER_OBJECT);
        assert!(out.iter().all(|e| e.reason.as_deref() != Some("Reason0")));
        assert!(out.iter().any(|e| e.reason.as_deref() == Some("Reason39")));
    }

    #[test]
    fn claim_events_reach_the_virtual_claim() {
        let claim = ReflectedObject {
            kind: "PersistentVolumeClaim".to_owned(),
            physical_namespace: "mount".to_owned(),
            physical_name: "data-abc".to_owned(),
            physical_uid: "c-uid".to_owned(),
            virtual_ref: serde_json::from_value(json!({"apiVersion": "v1",
                "kind": "PersistentVolumeClaim", "namespace": "shop", "name": "data", "uid": "v"}))
            .unwrap(),
            nodes: BTreeMap::new(),
        };
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "mount"},
            "involvedObject": {"kind": "PersistentVolumeClaim", "namespace": "mount",
                "name": "data-abc", "uid": "c-uid"},
            "type": "Warning", "reason": "ProvisioningFailed",
            "message": "failed to provision volume for claim \"mount/data-abc\"",
            "source": {"component": "persistentvolume-controller"},
        }))
        .unwrap();
        // A pod's Event of the same name is not the claim's.
        let mut pod_event = event.clone();
        pod_event.involved_object.kind = Some("Pod".to_owned());
        let out = reflected_events(&claim, &[&event, &pod_event]);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].message.as_deref(),
            Some("failed to provision volume for claim \"shop/data\"")
        );
        assert_eq!(out[0].count, Some(1));
        assert_eq!(
            out[0].involved_object.kind.as_deref(),
            Some("PersistentVolumeClaim")
        );
    }
}
