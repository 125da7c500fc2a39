//! An audit trail of the writes a cluster served: who (the acting user, and who impersonated
//! it), what (verb, resource, namespace, name) and the response code, as kube-apiserver's
//! audit log records them at the `Metadata` level. Reads are recorded only when the cluster's
//! `audit_reads` option asks for them, so by default the trail costs nothing on the read path.
//! The newest [`AUDIT_LIMIT`] events are kept.

use std::collections::VecDeque;
use std::sync::Mutex;

/// How many events a cluster keeps.
pub const AUDIT_LIMIT: usize = 10_000;

/// One served request (a write; a read when reads are recorded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    /// The user the request acted as.
    pub user: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// The authenticated requester, when it impersonated `user`.
    pub impersonated_by: Option<String>,
    /// `create`, `update`, `patch`, `delete` or `deletecollection`; `get`, `list` or `watch`
    /// when reads are recorded.
    pub verb: String,
    /// API group, empty for core.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource, empty if none.
    pub subresource: String,
    /// Namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// Object name from the path (empty for creates and collections).
    pub name: String,
    /// The response's status code.
    pub code: u16,
    /// The client's `User-Agent`.
    pub user_agent: String,
}

/// The audit trail of one cluster.
#[derive(Default)]
pub struct AuditLog {
    events: Mutex<VecDeque<AuditEvent>>,
}

impl AuditLog {
    /// Whether requests with `verb` are recorded: writes always, reads when `reads`.
    pub fn records(verb: &str, reads: bool) -> bool {
        match verb {
            "create" | "update" | "patch" | "delete" | "deletecollection" => true,
            "get" | "list" | "watch" => reads,
            _ => false,
        }
    }

    /// Records one event, dropping the oldest beyond [`AUDIT_LIMIT`].
    pub fn record(&self, event: AuditEvent) {
        let mut events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        if events.len() >= AUDIT_LIMIT {
            events.pop_front();
        }
        events.push_back(event);
    }

    /// The events kept, oldest first.
    pub fn events(&self) -> Vec<AuditEvent> {
        let events = self.events.lock().unwrap_or_else(|p| p.into_inner());
        events.iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_always_reads_on_request_and_the_oldest_go_first() {
        for (verb, recorded) in [
            ("create", true),
            ("patch", true),
            ("deletecollection", true),
            ("get", false),
            ("list", false),
            ("watch", false),
        ] {
            assert_eq!(AuditLog::records(verb, false), recorded, "{verb}");
            assert!(AuditLog::records(verb, true), "{verb} with reads recorded");
        }
        let log = AuditLog::default();
        for i in 0..AUDIT_LIMIT + 2 {
            log.record(AuditEvent {
                user: format!("u{i}"),
                groups: vec![],
                impersonated_by: None,
                verb: "create".into(),
                group: String::new(),
                resource: "configmaps".into(),
                subresource: String::new(),
                namespace: "default".into(),
                name: String::new(),
                code: 201,
                user_agent: String::new(),
            });
        }
        let events = log.events();
        assert_eq!(events.len(), AUDIT_LIMIT);
        assert_eq!(events[0].user, "u2");
    }
}
