//! The audit trail: one record per write made through Kairship (REST, gRPC, the console and
//! the native proxy), kept in the host cluster as `AuditRecord` objects, bounded by age and
//! count, and queryable by instance, user, verb and time.
//!
//! Reads are never recorded, and a record never holds a request or response body: only who
//! wrote what, through which door, and how it ended. A failure's message is kept except for
//! Secrets, whose validation messages may quote values.
//!
//! Recording never waits on the host cluster: [`AuditSink::record`] hands the record to a
//! bounded queue that [`log::HostAuditLog`] drains in the background, so a write's latency
//! does not include the audit write.

pub mod log;
mod writer;

pub use writer::AuditedWriter;

use jiff::Timestamp;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Label naming the instance a record is about.
pub const INSTANCE_LABEL: &str = "kairship.io/instance";
/// Label holding the record's verb.
pub const VERB_LABEL: &str = "kairship.io/verb";
/// Label holding the door the write came through.
pub const DOOR_LABEL: &str = "kairship.io/door";

/// A write made through Kairship, as recorded in the host cluster.
#[derive(
    CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
#[kube(
    group = "kairship.io",
    version = "v1alpha1",
    kind = "AuditRecord",
    plural = "auditrecords",
    namespaced,
    shortname = "kar",
    printcolumn = r#"{"name":"Instance","type":"string","jsonPath":".spec.instance"}"#,
    printcolumn = r#"{"name":"User","type":"string","jsonPath":".spec.user"}"#,
    printcolumn = r#"{"name":"Verb","type":"string","jsonPath":".spec.verb"}"#,
    printcolumn = r#"{"name":"Resource","type":"string","jsonPath":".spec.object.resource"}"#,
    printcolumn = r#"{"name":"Name","type":"string","jsonPath":".spec.object.name"}"#,
    printcolumn = r#"{"name":"Code","type":"integer","jsonPath":".spec.code"}"#,
    printcolumn = r#"{"name":"Time","type":"string","jsonPath":".spec.time"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecordSpec {
    /// When the write was answered (RFC 3339, microseconds).
    pub time: String,
    /// The authenticated caller's user name.
    pub user: String,
    /// The caller's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Who the instance saw make the write: the caller (impersonated) or Kairship's own
    /// credentials for the instance.
    pub acting_as: String,
    /// The instance written to; empty for writes of Kairship's own objects with no instance.
    #[serde(default)]
    pub instance: String,
    /// Where the write came in: `rest`, `grpc`, `console` or `proxy`.
    pub door: String,
    /// What was done: a Kubernetes verb (`create`, `update`, `patch`, `delete`,
    /// `deletecollection`) or the action's name (`join`, `promote`, `restart`, ...).
    pub verb: String,
    /// What was written.
    pub object: AuditObject,
    /// The HTTP status code of the answer (gRPC answers are mapped to their HTTP equivalent).
    pub code: u16,
    /// The failure's message, for codes of 400 and above (never for Secrets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The object a write was about.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct AuditObject {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// API version.
    #[serde(default)]
    pub version: String,
    /// Resource (plural).
    #[serde(default)]
    pub resource: String,
    /// Subresource, if any (`status`, `scale`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
    /// Namespace, empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name, empty for a create whose name the server generates or a collection.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// The longest failure message kept in a record.
const MAX_MESSAGE: usize = 1024;

impl AuditRecordSpec {
    /// A record of a write answered now, with the message kept only where it may be.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        caller: &crate::access::Caller,
        acting_as: impl Into<String>,
        instance: impl Into<String>,
        door: Door,
        verb: impl Into<String>,
        object: AuditObject,
        code: u16,
        message: Option<String>,
    ) -> AuditRecordSpec {
        let message = if code >= 400 && object.resource != "secrets" {
            message.map(|m| truncate(&m, MAX_MESSAGE))
        } else {
            None
        };
        AuditRecordSpec {
            time: format_time(Timestamp::now()),
            user: caller.user.clone(),
            groups: caller.groups.clone(),
            acting_as: acting_as.into(),
            instance: instance.into(),
            door: door.as_str().to_string(),
            verb: verb.into(),
            object,
            code,
            message,
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Prints a record time: RFC 3339 in UTC with microseconds, so records sort by their text.
pub fn format_time(time: Timestamp) -> String {
    time.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Where a write came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Door {
    /// The REST API.
    Rest,
    /// The gRPC API.
    Grpc,
    /// The web console.
    Console,
    /// The native (kubectl-style) proxy.
    Proxy,
}

impl Door {
    /// The spelling in records and queries.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Rest => "rest",
            Door::Grpc => "grpc",
            Door::Console => "console",
            Door::Proxy => "proxy",
        }
    }

    /// The door spelled `text` in records and queries.
    pub fn parse(text: &str) -> Option<Door> {
        [Door::Rest, Door::Grpc, Door::Console, Door::Proxy]
            .into_iter()
            .find(|door| door.as_str() == text)
    }
}

tokio::task_local! {
    static DOOR: Door;
}

/// Runs `future` as handling a request that came in through `door`: writes it makes are
/// recorded with that door. Each transport wraps its handlers in it.
pub async fn through<F: std::future::Future>(door: Door, future: F) -> F::Output {
    DOOR.scope(door, future).await
}

/// The door of the request being handled; REST when no transport said.
pub fn current_door() -> Door {
    DOOR.try_with(|door| *door).unwrap_or(Door::Rest)
}

/// Something that keeps audit records. [`record`](AuditSink::record) must not wait on I/O.
pub trait AuditSink: Send + Sync {
    /// Keeps one record (or counts it as dropped if the queue is full).
    fn record(&self, record: AuditRecordSpec);
}

/// A sink that keeps nothing, for embedders that do not want an audit trail.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoAudit;

impl AuditSink for NoAudit {
    fn record(&self, _record: AuditRecordSpec) {}
}

/// Which records a query asks for. Empty fields match everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only records of these instances (the ones the caller may read).
    pub instances: Option<Vec<String>>,
    /// Only records of this user.
    pub user: Option<String>,
    /// Only records of this verb.
    pub verb: Option<String>,
    /// Only records of writes through this door (`rest`, `grpc`, `console`, `proxy`).
    pub door: Option<String>,
    /// Only records at or after this time (RFC 3339).
    pub since: Option<Timestamp>,
    /// Only records before this time (RFC 3339).
    pub until: Option<Timestamp>,
}

impl AuditQuery {
    /// Whether `record` answers the query.
    pub fn matches(&self, record: &AuditRecordSpec) -> bool {
        if let Some(instances) = &self.instances
            && !instances.contains(&record.instance)
        {
            return false;
        }
        if self.user.as_ref().is_some_and(|u| *u != record.user)
            || self.verb.as_ref().is_some_and(|v| *v != record.verb)
            || self.door.as_ref().is_some_and(|d| *d != record.door)
        {
            return false;
        }
        if self.since.is_some() || self.until.is_some() {
            let Ok(time) = record.time.parse::<Timestamp>() else {
                return false;
            };
            if self.since.is_some_and(|since| time < since)
                || self.until.is_some_and(|until| time >= until)
            {
                return false;
            }
        }
        true
    }
}

/// How much of the trail is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Records older than this are deleted.
    pub max_age: std::time::Duration,
    /// Beyond this many records, the oldest are deleted.
    pub max_records: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_age: std::time::Duration::from_secs(7 * 24 * 3600),
            max_records: 10_000,
        }
    }
}

/// The records to delete so that what remains is within `retention`: `records` are
/// `(name, time)` pairs in any order; the answer lists names, oldest first.
pub fn expired<'a>(
    records: &[(&'a str, &str)],
    retention: Retention,
    now: Timestamp,
) -> Vec<&'a str> {
    // A record whose time cannot be read counts as the oldest.
    let mut sorted: Vec<_> = records
        .iter()
        .map(|(name, time)| (*name, time.parse::<Timestamp>().ok()))
        .collect();
    sorted.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
    let over_count = sorted.len().saturating_sub(retention.max_records);
    let oldest_kept = jiff::SignedDuration::try_from(retention.max_age)
        .ok()
        .and_then(|age| now.checked_sub(age).ok());
    sorted
        .iter()
        .enumerate()
        .filter(|(index, (_, time))| {
            *index < over_count
                || match (time, oldest_kept) {
                    (Some(time), Some(oldest)) => *time < oldest,
                    (None, _) => true,
                    (Some(_), None) => false,
                }
        })
        .map(|(_, (name, _))| *name)
        .collect()
}

/// A record's object name: its time, then a random suffix, so names sort by time and two
/// replicas never collide.
pub fn record_name(time: &str, suffix: u32) -> String {
    let digits: String = time.chars().filter(char::is_ascii_digit).collect();
    format!("{digits}-{suffix:08x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Caller;

    fn record(instance: &str, user: &str, verb: &str, time: &str) -> AuditRecordSpec {
        AuditRecordSpec {
            time: time.into(),
            user: user.into(),
            groups: vec![],
            acting_as: user.into(),
            instance: instance.into(),
            door: "rest".into(),
            verb: verb.into(),
            object: AuditObject::default(),
            code: 200,
            message: None,
        }
    }

    #[test]
    fn queries_filter_by_instance_user_verb_and_time() {
        let r = record("k1", "alice", "create", "2026-11-29T01:00:00.000000Z");
        let at = |t: &str| t.parse::<Timestamp>().ok();
        let cases = [
            ("everything", AuditQuery::default(), true),
            (
                "instance allowed",
                AuditQuery {
                    instances: Some(vec!["k1".into()]),
                    ..Default::default()
                },
                true,
            ),
            (
                "instance not allowed",
                AuditQuery {
                    instances: Some(vec!["k2".into()]),
                    ..Default::default()
                },
                false,
            ),
            (
                "no instance allowed",
                AuditQuery {
                    instances: Some(vec![]),
                    ..Default::default()
                },
                false,
            ),
            (
                "user",
                AuditQuery {
                    user: Some("alice".into()),
                    ..Default::default()
                },
                true,
            ),
            (
                "other user",
                AuditQuery {
                    user: Some("bob".into()),
                    ..Default::default()
                },
                false,
            ),
            (
                "other verb",
                AuditQuery {
                    verb: Some("delete".into()),
                    ..Default::default()
                },
                false,
            ),
            (
                "since is inclusive",
                AuditQuery {
                    since: at("2026-11-29T01:00:00Z"),
                    ..Default::default()
                },
                true,
            ),
            (
                "until is exclusive",
                AuditQuery {
                    until: at("2026-11-29T01:00:00Z"),
                    ..Default::default()
                },
                false,
            ),
            (
                "inside the range",
                AuditQuery {
                    since: at("2026-11-29T00:00:00Z"),
                    until: at("2026-11-29T02:00:00Z"),
                    ..Default::default()
                },
                true,
            ),
        ];
        for (name, query, expected) in cases {
            assert_eq!(query.matches(&r), expected, "{name}");
        }
    }

    #[test]
    fn retention_drops_the_oldest_beyond_count_and_age() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let records = [
            ("c", "2026-11-29T11:00:00.000000Z"),
            ("a", "2026-11-20T11:00:00.000000Z"),
            ("b", "2026-11-29T10:00:00.000000Z"),
            ("d", "2026-11-29T11:30:00.000000Z"),
            ("bad", "yesterday"),
        ];
        let retention = |age_hours: u64, max_records| Retention {
            max_age: std::time::Duration::from_secs(age_hours * 3600),
            max_records,
        };
        assert_eq!(
            expired(&records, retention(24 * 7, 100), now),
            vec!["bad", "a"]
        );
        assert_eq!(
            expired(&records, retention(24 * 30, 2), now),
            vec!["bad", "a", "b"]
        );
        assert_eq!(
            expired(&records, retention(1, 100), now),
            vec!["bad", "a", "b"]
        );
        assert!(expired(&records[..1], retention(24, 1), now).is_empty());
    }

    #[test]
    fn messages_are_kept_for_failures_but_never_for_secrets() {
        let caller = Caller::new("alice", vec![]);
        let object = |resource: &str| AuditObject {
            resource: resource.into(),
            ..Default::default()
        };
        let failed = AuditRecordSpec::new(
            &caller,
            "alice",
            "k1",
            Door::Rest,
            "create",
            object("configmaps"),
            422,
            Some("invalid".into()),
        );
        assert_eq!(failed.message.as_deref(), Some("invalid"));
        let secret = AuditRecordSpec::new(
            &caller,
            "alice",
            "k1",
            Door::Proxy,
            "create",
            object("secrets"),
            422,
            Some("data[x]: Invalid value: \"hunter2\"".into()),
        );
        assert_eq!(secret.message, None);
        let ok = AuditRecordSpec::new(
            &caller,
            "alice",
            "k1",
            Door::Grpc,
            "create",
            object("configmaps"),
            201,
            Some("created".into()),
        );
        assert_eq!(ok.message, None);
        let long = AuditRecordSpec::new(
            &caller,
            "alice",
            "k1",
            Door::Rest,
            "create",
            object("configmaps"),
            500,
            Some("é".repeat(2000)),
        );
        assert!(
            long.message
                .is_some_and(|m| m.len() <= MAX_MESSAGE + '…'.len_utf8())
        );
    }

    #[test]
    fn record_names_sort_by_time() {
        let a = record_name("2026-11-29T01:00:00.000001Z", 0xffff_ffff);
        let b = record_name("2026-11-29T01:00:00.000002Z", 0);
        assert!(a < b);
        assert_eq!(a, "20261129010000000001-ffffffff");
    }
}
