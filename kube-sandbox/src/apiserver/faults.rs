//! Injected failures: make a cluster answer errors, answer slowly, or not answer at all, for
//! chosen resources and verbs, so tests can prove that clients recover.

use std::sync::Mutex;
use std::time::Duration;

/// What an injected fault does to a matching request.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultAction {
    /// Answer with this HTTP status and a `kind: Status` body.
    Status(u16),
    /// Wait this long, then serve the request normally.
    Delay(Duration),
    /// Never answer (until the client gives up or the fault is removed).
    Hang,
}

/// Which requests a fault applies to, and what it does.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// Plural resource name (`pods`); `None` matches every request, discovery included.
    pub resource: Option<String>,
    /// Verbs (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`); empty matches all.
    pub verbs: Vec<String>,
    /// What happens.
    pub action: FaultAction,
}

impl FaultRule {
    /// A fault on every request.
    pub fn all(action: FaultAction) -> Self {
        FaultRule {
            resource: None,
            verbs: Vec::new(),
            action,
        }
    }

    fn matches(&self, resource: Option<&str>, verb: &str) -> bool {
        let resource_ok = match &self.resource {
            None => true,
            Some(r) => resource == Some(r.as_str()),
        };
        resource_ok && (self.verbs.is_empty() || self.verbs.iter().any(|v| v == verb))
    }
}

/// The faults in force on one cluster.
#[derive(Default)]
pub struct Faults {
    rules: Mutex<Vec<(u64, FaultRule)>>,
    next_id: Mutex<u64>,
    storage_unhealthy: std::sync::atomic::AtomicBool,
}

impl Faults {
    /// Makes `/readyz` and `/healthz` fail as kube-apiserver's do when etcd is unhealthy
    /// (`/livez` and every other request still answer), or heal them again.
    pub fn set_storage_unhealthy(&self, unhealthy: bool) {
        self.storage_unhealthy
            .store(unhealthy, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the storage health checks fail.
    pub fn storage_unhealthy(&self) -> bool {
        self.storage_unhealthy
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Adds a fault; returns its id for [`Faults::remove`].
    pub fn add(&self, rule: FaultRule) -> u64 {
        let mut next = self.next_id.lock().unwrap_or_else(|p| p.into_inner());
        *next += 1;
        let id = *next;
        self.rules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, rule));
        id
    }

    /// Removes one fault.
    pub fn remove(&self, id: u64) {
        self.rules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(i, _)| *i != id);
    }

    /// Removes every fault.
    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The action of the first fault matching a request, if any.
    pub fn find(&self, resource: Option<&str>, verb: &str) -> Option<FaultAction> {
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        rules
            .iter()
            .find(|(_, r)| r.matches(resource, verb))
            .map(|(_, r)| r.action.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_match_by_resource_and_verb() {
        let faults = Faults::default();
        let id = faults.add(FaultRule {
            resource: Some("pods".into()),
            verbs: vec!["create".into()],
            action: FaultAction::Status(500),
        });
        assert_eq!(
            faults.find(Some("pods"), "create"),
            Some(FaultAction::Status(500))
        );
        assert_eq!(faults.find(Some("pods"), "get"), None);
        assert_eq!(faults.find(Some("nodes"), "create"), None);
        faults.remove(id);
        assert_eq!(faults.find(Some("pods"), "create"), None);
        faults.add(FaultRule::all(FaultAction::Hang));
        assert_eq!(faults.find(None, "get"), Some(FaultAction::Hang));
        faults.clear();
        assert_eq!(faults.find(None, "get"), None);
    }
}
