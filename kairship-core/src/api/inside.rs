//! The description of a call on something inside an instance ([`Inside`]), which
//! `KairshipService::inside` checks, authorizes and prepares in one place, and what it hands on
//! ([`Checked`]).

use serde_json::Value;

use super::body::Expected;
use super::kinds::ResourceKind;
use super::types::ListOptions;
use crate::access::Verb;
use crate::router::{ListQuery, ResourceTarget};

/// A call on something inside an instance, as the API received it: every such call goes
/// through `KairshipService::inside` (in `kairship.rs`).
pub(super) struct Inside<'a> {
    pub(super) instance: &'a str,
    pub(super) of: Of<'a>,
    /// The one object the call names, as `(field, name)` for the error message.
    pub(super) name: Option<(&'static str, &'a str)>,
    /// The options of a list; a call without them concerns one object, so a namespaced kind
    /// needs its namespace.
    pub(super) options: Option<&'a ListOptions>,
    /// The body of a create or update, checked against the kind, namespace and `name`.
    pub(super) body: Option<Value>,
    /// What the caller must be allowed on the instance's
    /// [`InstanceResource::Proxy`](crate::access::InstanceResource::Proxy).
    pub(super) verb: Verb,
    /// What is attempted, for the "may not" message.
    pub(super) what: String,
}

/// What inside an instance a call is about.
#[derive(Clone, Copy)]
pub(super) enum Of<'a> {
    /// The member clusters (`cluster.karmada.io` Clusters, cluster-scoped).
    Clusters,
    /// Objects of `kind`, in `namespace` when given.
    Kind {
        kind: ResourceKind,
        namespace: Option<&'a str>,
    },
}

impl<'a> Inside<'a> {
    pub(super) fn clusters(instance: &'a str, verb: Verb, what: impl Into<String>) -> Self {
        Self::of(instance, Of::Clusters, verb, what.into())
    }

    pub(super) fn kind(
        instance: &'a str,
        kind: ResourceKind,
        namespace: Option<&'a str>,
        verb: Verb,
        what: impl Into<String>,
    ) -> Self {
        Self::of(instance, Of::Kind { kind, namespace }, verb, what.into())
    }

    /// A call on objects of `kind`, attempting `action` on them (`"read"` becomes
    /// `"read configmaps"` in the "may not" message).
    pub(super) fn resource(
        instance: &'a str,
        kind: ResourceKind,
        namespace: Option<&'a str>,
        verb: Verb,
        action: &str,
    ) -> Self {
        Self::kind(instance, kind, namespace, verb, format!("{action} {kind}"))
    }

    fn of(instance: &'a str, of: Of<'a>, verb: Verb, what: String) -> Self {
        Inside {
            instance,
            of,
            name: None,
            options: None,
            body: None,
            verb,
            what,
        }
    }

    /// The call names one object, `name`, reported as `field` when malformed.
    pub(super) fn named(mut self, field: &'static str, name: &'a str) -> Self {
        self.name = Some((field, name));
        self
    }

    /// The call lists, with `options`.
    pub(super) fn listing(mut self, options: &'a ListOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// The call writes `body`.
    pub(super) fn with_body(mut self, body: Value) -> Self {
        self.body = Some(body);
        self
    }

    /// What the body must be: the kind's `apiVersion` and `kind`, its namespace, and the name
    /// the call names (if any).
    pub(super) fn expected(&self) -> Expected<'a> {
        let name = self.name.map(|(_, name)| name);
        match self.of {
            Of::Clusters => Expected {
                api_version: "cluster.karmada.io/v1alpha1",
                kind: "Cluster",
                namespace: None,
                name,
            },
            Of::Kind { kind, namespace } => Expected {
                api_version: kind.api_version(),
                kind: kind.kind(),
                namespace,
                name,
            },
        }
    }
}

/// An [`Inside`] call once checked, authorized and prepared.
pub(super) struct Checked {
    pub(super) target: ResourceTarget,
    /// The list query (the default one when the call does not list).
    pub(super) query: ListQuery,
    /// The prepared body (`null` when the call writes none).
    pub(super) body: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_body_follows_the_kind_namespace_and_name() {
        let call = Inside::clusters("inst", Verb::Update, "update").named("cluster", "east");
        let e = call.expected();
        assert_eq!(
            (e.api_version, e.kind, e.namespace, e.name),
            ("cluster.karmada.io/v1alpha1", "Cluster", None, Some("east"))
        );
        let call = Inside::kind(
            "inst",
            ResourceKind::Configmaps,
            Some("team-a"),
            Verb::Create,
            "create",
        );
        let e = call.expected();
        assert_eq!(
            (e.api_version, e.kind, e.namespace, e.name),
            ("v1", "ConfigMap", Some("team-a"), None)
        );
        assert!(call.body.is_none() && call.options.is_none());
    }
}
