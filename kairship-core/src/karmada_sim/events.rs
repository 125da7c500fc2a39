//! The Events Karmada's controllers record, emulated: the same reasons, messages, involved
//! objects and components (recorded from a real Karmada v1.19 in
//! `kairship-core/tests/data/karmada-v1.19/events-demo.json` and `events-cluster-mreal.json`),
//! written as client-go's recorder writes them (`k8s.io/client-go/tools/record`):
//!
//! - an Event is named `<object name>.<hex of the Unix time in nanoseconds>` in the object's
//!   namespace, or `default` for a cluster-scoped object (`recorder.makeEvent`);
//! - the same event again (same component, object, type, reason and message) is not a new
//!   Event: the first one's `count` goes up and its `lastTimestamp` moves (`EventLogger`,
//!   `eventObserve`), written with a patch; a patch of an Event that is gone creates it again
//!   (`recordEvent`);
//! - each component may record 25 events about one object at once, then one every 5 minutes
//!   (`EventSourceObjectSpamFilter`, `defaultSpamBurst`, `defaultSpamQPS`); the rest are dropped;
//! - events are written in the background, in the order recorded, and never hold up a
//!   controller (`Broadcaster`); a write that fails is dropped.
//!
//! Not emulated: client-go's aggregation of more than ten similar events with different
//! messages into one "(combined from similar events)" Event.

use std::collections::HashMap;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::objects::TEMPLATE_UID;

/// The components that record events, as Karmada names them (`source.component`).
pub mod component {
    /// `pkg/detector`: policies applied to resource templates.
    pub const RESOURCE_DETECTOR: &str = "resource-detector";
    /// karmada-scheduler.
    pub const SCHEDULER: &str = "default-scheduler";
    /// `pkg/controllers/binding`: Works made from bindings.
    pub const BINDING: &str = "binding-controller";
    /// `pkg/util/overridemanager`.
    pub const OVERRIDE_MANAGER: &str = "override-manager";
    /// `pkg/controllers/execution`: Works applied to members.
    pub const EXECUTION: &str = "execution-controller";
    /// `pkg/controllers/status`: aggregated status of bindings and templates.
    pub const BINDING_STATUS: &str = "resource-binding-status-controller";
    /// `pkg/controllers/cluster`: execution spaces and taints.
    pub const CLUSTER: &str = "cluster-controller";
}

/// What an Event is about (`corev1.ObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// Kind.
    pub kind: String,
    /// `group/version`, or `version` for the core group.
    pub api_version: String,
    /// Namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// The resourceVersion read, when the reference was made from the object itself.
    pub resource_version: String,
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl ObjectRef {
    /// The reference client-go makes of an object as read (`reference.GetReference`): with
    /// its resourceVersion. `None` without kind, name or uid.
    pub fn of(object: &Value) -> Option<ObjectRef> {
        let reference = ObjectRef {
            kind: text(object, "/kind").to_owned(),
            api_version: text(object, "/apiVersion").to_owned(),
            namespace: text(object, "/metadata/namespace").to_owned(),
            name: text(object, "/metadata/name").to_owned(),
            uid: text(object, "/metadata/uid").to_owned(),
            resource_version: text(object, "/metadata/resourceVersion").to_owned(),
        };
        reference.complete()
    }

    /// The scheduler's reference to a binding's resource template
    /// (`recordScheduleResultEventForResourceBinding`): `spec.resource`, no resourceVersion.
    pub fn template_of(binding: &Value) -> Option<ObjectRef> {
        let resource = &binding["spec"]["resource"];
        ObjectRef {
            kind: text(resource, "/kind").to_owned(),
            api_version: text(resource, "/apiVersion").to_owned(),
            namespace: text(resource, "/namespace").to_owned(),
            name: text(resource, "/name").to_owned(),
            uid: text(resource, "/uid").to_owned(),
            resource_version: String::new(),
        }
        .complete()
    }

    /// The reference the execution controller makes of a Work's manifest (`util.GenEventRef`):
    /// the template's uid from the manifest's `resourcetemplate.karmada.io/uid` annotation.
    pub fn of_manifest(manifest: &Value) -> Option<ObjectRef> {
        let uid = match text(manifest, "/metadata/uid") {
            "" => manifest
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(TEMPLATE_UID))
                .and_then(Value::as_str)
                .unwrap_or(""),
            uid => uid,
        };
        ObjectRef {
            uid: uid.to_owned(),
            resource_version: String::new(),
            ..ObjectRef::of_unchecked(manifest)
        }
        .complete()
    }

    fn of_unchecked(object: &Value) -> ObjectRef {
        ObjectRef {
            kind: text(object, "/kind").to_owned(),
            api_version: text(object, "/apiVersion").to_owned(),
            namespace: text(object, "/metadata/namespace").to_owned(),
            name: text(object, "/metadata/name").to_owned(),
            uid: text(object, "/metadata/uid").to_owned(),
            resource_version: text(object, "/metadata/resourceVersion").to_owned(),
        }
    }

    fn complete(self) -> Option<ObjectRef> {
        (!self.kind.is_empty() && !self.name.is_empty() && !self.uid.is_empty()).then_some(self)
    }

    /// `namespace/name` as klog's `KObj` prints it (`name` alone when cluster-scoped).
    pub fn key(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }

    fn to_json(&self) -> Value {
        let mut reference = json!({"kind": self.kind, "name": self.name, "uid": self.uid,
            "apiVersion": self.api_version});
        if !self.namespace.is_empty() {
            reference["namespace"] = json!(self.namespace);
        }
        if !self.resource_version.is_empty() {
            reference["resourceVersion"] = json!(self.resource_version);
        }
        reference
    }
}

/// `Normal` or `Warning`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something went as it should.
    Normal,
    /// Something failed.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event as a controller records it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The recording component.
    pub component: &'static str,
    /// What it is about.
    pub object: ObjectRef,
    /// Normal or Warning.
    pub event_type: EventType,
    /// Karmada's reason.
    pub reason: String,
    /// Karmada's message.
    pub message: String,
}

impl Recorded {
    /// client-go's `getEventKey`: what makes two events the same one.
    fn key(&self) -> String {
        let o = &self.object;
        [
            self.component,
            &o.kind,
            &o.namespace,
            &o.name,
            &o.uid,
            &o.api_version,
            self.event_type.as_str(),
            &self.reason,
            &self.message,
        ]
        .join("\u{0}")
    }

    /// client-go's `getSpamKey`: the component and the object.
    fn spam_key(&self) -> String {
        let o = &self.object;
        [
            self.component,
            &o.kind,
            &o.namespace,
            &o.name,
            &o.uid,
            &o.api_version,
        ]
        .join("\u{0}")
    }
}

/// How many events one component may record about one object at once (`defaultSpamBurst`).
const SPAM_BURST: f64 = 25.0;
/// One more every 5 minutes (`defaultSpamQPS` = 1/300).
const SPAM_REFILL_PER_SECOND: f64 = 1.0 / 300.0;

/// What to write for an event.
#[derive(Clone, Debug, PartialEq)]
pub enum Write {
    /// A new Event.
    Create {
        /// Namespace of the Event.
        namespace: String,
        /// The Event.
        event: Value,
    },
    /// The same event again: the first Event's count and last time.
    Patch {
        /// Namespace of the Event.
        namespace: String,
        /// Its name.
        name: String,
        /// The merge patch.
        patch: Value,
        /// The Event to create if it is gone.
        event: Value,
    },
}

#[derive(Clone, Debug)]
struct Seen {
    name: String,
    namespace: String,
    count: i64,
    first_timestamp: String,
}

/// client-go's `EventCorrelator` without the aggregator: the spam filter and the count of
/// identical events. Pure: the time comes from the caller.
#[derive(Debug, Default)]
pub struct Correlator {
    seen: HashMap<String, Seen>,
    // Tokens left, and when they were counted (seconds).
    buckets: HashMap<String, (f64, f64)>,
}

/// An RFC 3339 time in seconds, as `metav1.Time` is serialized.
fn seconds(at: jiff::Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Correlator {
    /// What to write for `recorded` at `at`; `None` when the spam filter drops it.
    pub fn observe(&mut self, recorded: &Recorded, at: jiff::Timestamp) -> Option<Write> {
        let now = at.as_duration().as_secs_f64();
        let bucket = self
            .buckets
            .entry(recorded.spam_key())
            .or_insert((SPAM_BURST, now));
        bucket.0 = (bucket.0 + (now - bucket.1) * SPAM_REFILL_PER_SECOND).min(SPAM_BURST);
        bucket.1 = now;
        if bucket.0 < 1.0 {
            return None;
        }
        bucket.0 -= 1.0;

        let key = recorded.key();
        let last = seconds(at);
        let namespace = match recorded.object.namespace.as_str() {
            "" => "default".to_owned(),
            ns => ns.to_owned(),
        };
        let event = |name: &str, count: i64, first: &str| {
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": recorded.object.to_json(),
                "reason": recorded.reason,
                "message": recorded.message,
                "source": {"component": recorded.component},
                "firstTimestamp": first,
                "lastTimestamp": last,
                "count": count,
                "type": recorded.event_type.as_str(),
                "reportingComponent": recorded.component,
                "reportingInstance": "",
            })
        };
        if let Some(seen) = self.seen.get_mut(&key) {
            seen.count += 1;
            return Some(Write::Patch {
                namespace: seen.namespace.clone(),
                name: seen.name.clone(),
                patch: json!({"count": seen.count, "lastTimestamp": last,
                    "message": recorded.message}),
                event: event(&seen.name, seen.count, &seen.first_timestamp),
            });
        }
        let name = format!("{}.{:x}", recorded.object.name, at.as_nanosecond());
        let created = event(&name, 1, &last);
        self.seen.insert(
            key,
            Seen {
                name,
                namespace: namespace.clone(),
                count: 1,
                first_timestamp: last,
            },
        );
        Some(Write::Create {
            namespace,
            event: created,
        })
    }
}

/// Records events in the background, in the order recorded. Cloning shares the queue.
#[derive(Clone, Debug)]
pub struct EventRecorder {
    queue: mpsc::UnboundedSender<Recorded>,
}

impl EventRecorder {
    /// Starts the writer on `client` until `shutdown`.
    pub fn start(client: Client, shutdown: CancellationToken) -> EventRecorder {
        let (queue, mut pending) = mpsc::unbounded_channel::<Recorded>();
        tokio::spawn(async move {
            let api_resource = ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "Event"),
                "events",
            );
            let mut correlator = Correlator::default();
            loop {
                let recorded = tokio::select! {
                    () = shutdown.cancelled() => return,
                    next = pending.recv() => match next {
                        Some(r) => r,
                        None => return,
                    },
                };
                let Some(write) = correlator.observe(&recorded, jiff::Timestamp::now()) else {
                    continue;
                };
                if let Err(e) = write_event(&client, &api_resource, write).await {
                    tracing::debug!(reason = %recorded.reason, error = %e, "event not written");
                }
            }
        });
        EventRecorder { queue }
    }

    /// Records one event (never waits).
    pub fn record(
        &self,
        component: &'static str,
        object: &ObjectRef,
        event_type: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let _ = self.queue.send(Recorded {
            component,
            object: object.clone(),
            event_type,
            reason: reason.to_owned(),
            message: message.into(),
        });
    }

    /// Records one event about `object` if it can be referred to (kind, name and uid).
    pub fn record_about(
        &self,
        component: &'static str,
        object: Option<ObjectRef>,
        event_type: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        if let Some(object) = object {
            self.record(component, &object, event_type, reason, message);
        }
    }
}

/// How long one Event write may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

async fn write_event(client: &Client, resource: &ApiResource, write: Write) -> Result<(), String> {
    let create = |namespace: &str, event: Value| {
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, resource);
        async move {
            let object: DynamicObject = serde_json::from_value(event).map_err(|e| e.to_string())?;
            api.create(&PostParams::default(), &object)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
    };
    let written = async {
        match write {
            Write::Create { namespace, event } => create(&namespace, event).await,
            Write::Patch {
                namespace,
                name,
                patch,
                event,
            } => {
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), &namespace, resource);
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(s)) if s.code == 404 => create(&namespace, event).await,
                    Err(e) => Err(e.to_string()),
                }
            }
        }
    };
    tokio::time::timeout(WRITE_TIMEOUT, written)
        .await
        .map_err(|_| "timed out".to_owned())?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> ObjectRef {
        ObjectRef {
            kind: "Deployment".into(),
            api_version: "apps/v1".into(),
            namespace: "demo".into(),
            name: "shop".into(),
            uid: "450d069b".into(),
            resource_version: "726".into(),
        }
    }

    fn recorded(message: &str) -> Recorded {
        Recorded {
            component: component::EXECUTION,
            object: deployment(),
            event_type: EventType::Normal,
            reason: "SyncSucceed".into(),
            message: message.into(),
        }
    }

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_796_000_000 + seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    #[test]
    fn events_are_named_and_shaped_as_client_go_makes_them() {
        let mut c = Correlator::default();
        let write = c.observe(
            &recorded("Successfully applied resource(demo/shop) to cluster msb"),
            at(0),
        );
        let Some(Write::Create { namespace, event }) = write else {
            panic!("a first event is created: {write:?}");
        };
        assert_eq!(namespace, "demo");
        // events-demo.json: `shop.18ec4e6379ab5632`, count 1, reportingInstance "".
        let name = event["metadata"]["name"].as_str().unwrap_or_default();
        assert_eq!(name, format!("shop.{:x}", at(0).as_nanosecond()));
        assert_eq!(event["count"], 1);
        assert_eq!(
            event["source"],
            json!({"component": "execution-controller"})
        );
        assert_eq!(event["reportingComponent"], "execution-controller");
        assert_eq!(event["reportingInstance"], "");
        assert_eq!(event["firstTimestamp"], event["lastTimestamp"]);
        assert_eq!(
            event["involvedObject"],
            json!({"kind": "Deployment", "namespace": "demo", "name": "shop", "uid": "450d069b",
                "apiVersion": "apps/v1", "resourceVersion": "726"})
        );
    }

    #[test]
    fn the_same_event_counts_up_and_another_message_is_another_event() {
        let mut c = Correlator::default();
        let first = c.observe(&recorded("a"), at(0));
        let again = c.observe(&recorded("a"), at(7));
        let other = c.observe(&recorded("b"), at(8));
        let Some(Write::Create { event, .. }) = first else {
            panic!("{first:?}");
        };
        match again {
            Some(Write::Patch {
                name,
                patch,
                event: recreated,
                ..
            }) => {
                assert_eq!(name, event["metadata"]["name"].as_str().unwrap_or_default());
                assert_eq!(patch["count"], 2);
                assert_eq!(patch["lastTimestamp"], seconds(at(7)));
                assert_eq!(recreated["firstTimestamp"], seconds(at(0)));
                assert_eq!(recreated["count"], 2);
            }
            w => panic!("the same event is patched: {w:?}"),
        }
        assert!(matches!(other, Some(Write::Create { .. })), "{other:?}");
    }

    #[test]
    fn a_cluster_scoped_object_has_its_events_in_default() {
        let mut c = Correlator::default();
        let cluster = ObjectRef {
            kind: "Cluster".into(),
            api_version: "cluster.karmada.io/v1alpha1".into(),
            name: "mreal".into(),
            uid: "u1".into(),
            ..ObjectRef::default()
        };
        let write = c.observe(
            &Recorded {
                component: component::CLUSTER,
                object: cluster,
                event_type: EventType::Normal,
                reason: "CreateExecutionSpaceSucceed".into(),
                message: "Created execution space(karmada-es-mreal) for cluster(mreal).".into(),
            },
            at(0),
        );
        match write {
            Some(Write::Create { namespace, event }) => {
                assert_eq!(namespace, "default");
                assert!(event["involvedObject"].get("namespace").is_none());
            }
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn the_spam_filter_lets_25_through_then_one_per_five_minutes() {
        let mut c = Correlator::default();
        let passed = (0..40)
            .filter(|i| c.observe(&recorded(&format!("m{i}")), at(0)).is_some())
            .count();
        assert_eq!(passed, 25);
        assert!(c.observe(&recorded("later"), at(299)).is_none());
        assert!(c.observe(&recorded("later"), at(301)).is_some());
        // Another object has its own budget.
        let mut other = recorded("x");
        other.object.name = "web".into();
        assert!(c.observe(&other, at(301)).is_some());
    }

    #[test]
    fn references_are_made_as_karmada_makes_them() {
        let template = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"namespace": "demo", "name": "shop", "uid": "t1", "resourceVersion": "9"}});
        assert_eq!(
            ObjectRef::of(&template).map(|r| r.resource_version),
            Some("9".into())
        );
        let binding = json!({"spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
            "namespace": "demo", "name": "shop", "uid": "t1", "resourceVersion": "9"}}});
        let from_binding = ObjectRef::template_of(&binding);
        assert_eq!(from_binding.as_ref().map(|r| r.uid.as_str()), Some("t1"));
        assert_eq!(
            from_binding.map(|r| r.resource_version),
            Some(String::new())
        );
        let manifest = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "demo",
            "name": "shop", "annotations": {TEMPLATE_UID: "s1"}}});
        assert_eq!(
            ObjectRef::of_manifest(&manifest).map(|r| r.uid),
            Some("s1".into())
        );
        assert_eq!(
            ObjectRef::of(&json!({"kind": "Deployment", "metadata": {"name": "x"}})),
            None
        );
    }
}
