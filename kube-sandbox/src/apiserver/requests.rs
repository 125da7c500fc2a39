//! Request counts by verb, resource and subresource, as kube-apiserver's
//! `apiserver_request_total` counts them, so tests and benchmarks can tell how many calls a
//! controller makes (for example, writes per reconciled object).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// What a request was, for counting.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestKind {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// Plural resource name (`pods`).
    pub resource: String,
    /// Subresource (`status`, `binding`), empty when none.
    pub subresource: String,
}

impl RequestKind {
    /// A kind of request.
    pub fn new(verb: &str, resource: &str, subresource: &str) -> Self {
        RequestKind {
            verb: verb.to_string(),
            resource: resource.to_string(),
            subresource: subresource.to_string(),
        }
    }

    /// Whether the verb changes state.
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }
}

/// Resource requests served by one cluster (discovery and health checks are not counted).
#[derive(Default)]
pub struct RequestCounts {
    counts: Mutex<BTreeMap<RequestKind, u64>>,
}

impl RequestCounts {
    /// Counts one request.
    pub fn record(&self, verb: &str, resource: &str, subresource: Option<&str>) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        // Look up by reference first: counting must not allocate on the hot path.
        let found = counts.iter_mut().find(|(k, _)| {
            k.verb == verb && k.resource == resource && k.subresource == subresource.unwrap_or("")
        });
        match found {
            Some((_, n)) => *n += 1,
            None => {
                counts.insert(
                    RequestKind::new(verb, resource, subresource.unwrap_or("")),
                    1,
                );
            }
        }
    }

    /// The counts so far.
    pub fn snapshot(&self) -> BTreeMap<RequestKind, u64> {
        self.counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Forgets every count.
    pub fn reset(&self) {
        self.counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// `after - before`, per kind, leaving out kinds that did not change.
pub fn difference(
    before: &BTreeMap<RequestKind, u64>,
    after: &BTreeMap<RequestKind, u64>,
) -> BTreeMap<RequestKind, u64> {
    after
        .iter()
        .filter_map(|(k, n)| {
            let delta = n.saturating_sub(before.get(k).copied().unwrap_or(0));
            (delta > 0).then(|| (k.clone(), delta))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_verb_resource_and_subresource() {
        let counts = RequestCounts::default();
        counts.record("create", "pods", None);
        counts.record("create", "pods", None);
        counts.record("patch", "pods", Some("status"));
        counts.record("get", "pods", None);
        let before = counts.snapshot();
        assert_eq!(
            before.get(&RequestKind::new("create", "pods", "")),
            Some(&2)
        );
        assert_eq!(
            before.get(&RequestKind::new("patch", "pods", "status")),
            Some(&1)
        );
        counts.record("patch", "pods", Some("status"));
        let delta = difference(&before, &counts.snapshot());
        assert_eq!(delta.len(), 1);
        assert_eq!(
            delta.get(&RequestKind::new("patch", "pods", "status")),
            Some(&1)
        );
        assert!(RequestKind::new("patch", "pods", "status").is_write());
        assert!(!RequestKind::new("watch", "pods", "").is_write());
        counts.reset();
        assert!(counts.snapshot().is_empty());
    }
}
