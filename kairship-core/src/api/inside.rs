//! The description of a call on something inside an instance ([`Inside`]), which
//! `KairshipService::inside` checks, authorizes and prepares in one place, and what it hands on
//! ([`Checked`]).

use kube::api::Patch;
use kube::core::ApiResource;
use serde_json::Value;

use super::body::{Expected, check_name};
use super::error::ApiError;
use super::kinds::{ResourceKind, clusters_resource};
use super::resources::PatchType;
use super::types::{CORE_GROUP, ListOptions};
use crate::access::Verb;
use crate::router::{DiscoveredResource, ListQuery, ResourceTarget};

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
    /// The body of a create or update, checked against the kind, namespace and `name`; for a
    /// patch, the patch.
    pub(super) body: Option<Value>,
    /// Set for a patch: how `body` applies.
    pub(super) patch: Option<PatchType>,
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
    /// Objects of any resource the instance serves, found by its discovery, in `namespace`
    /// when given.
    Resource {
        gvr: Gvr<'a>,
        namespace: Option<&'a str>,
    },
}

/// A resource as a generic call names it: group (`core` for the core group), version and
/// plural.
#[derive(Clone, Copy, Debug)]
pub(super) struct Gvr<'a> {
    pub(super) group: &'a str,
    pub(super) version: &'a str,
    pub(super) resource: &'a str,
}

/// The resource a call is about, once known: from the kind, or from the instance's discovery.
#[derive(Clone, Debug)]
pub(super) struct Resolved {
    pub(super) resource: ApiResource,
    pub(super) namespaced: bool,
    /// The typed kind the resource is, if any (policies take `{"data": ...}` bodies, and a
    /// PropagationPolicy in use is kept).
    pub(super) kind: Option<ResourceKind>,
}

impl Resolved {
    pub(super) fn of_kind(kind: ResourceKind) -> Resolved {
        Resolved {
            resource: kind.api_resource(),
            namespaced: kind.namespaced(),
            kind: Some(kind),
        }
    }

    pub(super) fn clusters() -> Resolved {
        Resolved {
            resource: clusters_resource(),
            namespaced: false,
            kind: None,
        }
    }

    pub(super) fn discovered(found: DiscoveredResource) -> Resolved {
        let kind = ResourceKind::ALL.into_iter().find(|k| {
            let (group, version, _, plural) = k.gvk_plural();
            found.resource.group == group
                && found.resource.version == version
                && found.resource.plural == plural
        });
        Resolved {
            resource: found.resource,
            namespaced: found.namespaced,
            kind,
        }
    }

    /// What a body must be: the resource's `apiVersion` and `kind`, `namespace`, and `name`
    /// (if the call names an object).
    pub(super) fn expected<'a>(
        &'a self,
        namespace: Option<&'a str>,
        name: Option<&'a str>,
    ) -> Expected<'a> {
        Expected {
            api_version: &self.resource.api_version,
            kind: &self.resource.kind,
            namespace,
            name,
        }
    }

    /// How the resource is named in messages: its plural, with the group version when it is
    /// not one of the typed kinds.
    pub(super) fn describe(&self) -> String {
        match self.kind {
            Some(kind) => kind.plural().to_owned(),
            None => format!("{} ({})", self.resource.plural, self.resource.api_version),
        }
    }
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
            patch: None,
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

    /// The call patches with `patch` of type `patch_type`.
    pub(super) fn with_patch(mut self, patch_type: PatchType, patch: Value) -> Self {
        self.body = Some(patch);
        self.patch = Some(patch_type);
        self
    }

    /// A call on objects of the resource `gvr`, attempting `action` on them.
    pub(super) fn generic(
        instance: &'a str,
        gvr: Gvr<'a>,
        namespace: Option<&'a str>,
        verb: Verb,
        action: &str,
    ) -> Self {
        let what = format!("{action} {}", gvr.resource);
        Self::of(instance, Of::Resource { gvr, namespace }, verb, what)
    }

    /// The namespace the call names, if any.
    pub(super) fn namespace(&self) -> Option<&'a str> {
        match self.of {
            Of::Clusters => None,
            Of::Kind { namespace, .. } | Of::Resource { namespace, .. } => namespace,
        }
    }

    /// What the body must be once the resource is `resolved`.
    pub(super) fn expected<'r>(&self, resolved: &'r Resolved) -> Expected<'r>
    where
        'a: 'r,
    {
        resolved.expected(self.namespace(), self.name.map(|(_, name)| name))
    }
}

/// Checks that a call on `what` in `namespace` fits the resource's scope: a cluster-scoped
/// resource has no namespace, and a namespaced one needs it when the call is about `one`
/// object.
pub(super) fn check_scope(
    what: &str,
    namespaced: bool,
    namespace: Option<&str>,
    one: bool,
) -> Result<(), ApiError> {
    match (namespaced, namespace) {
        (false, Some(ns)) => Err(ApiError::invalid_field(
            "namespace",
            format!("{what} are cluster-scoped; {ns:?} cannot hold them"),
        )),
        (true, None) if one => Err(ApiError::invalid_field(
            "namespace",
            format!("{what} are namespaced: name the namespace"),
        )),
        (_, Some(ns)) => check_name("namespace", ns),
        (_, None) => Ok(()),
    }
}

/// Longest API version and resource plural (DNS labels).
const MAX_LABEL_LEN: usize = 63;

fn is_label(value: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    !value.is_empty()
        && value.len() <= MAX_LABEL_LEN
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && edge(value.chars().next())
        && edge(value.chars().last())
}

/// Checks the spelling of a generic call's group (`core`, or a DNS subdomain such as
/// `apps`, `policy.karmada.io`), version (`v1`, `v1beta1`) and resource plural (a DNS label).
pub(super) fn check_gvr(gvr: Gvr<'_>) -> Result<(), ApiError> {
    if gvr.group.is_empty() {
        return Err(ApiError::invalid_field(
            "group",
            format!("is empty: the core group is spelled {CORE_GROUP:?}"),
        ));
    }
    check_name("group", gvr.group)?;
    let version_ok = !gvr.version.is_empty()
        && gvr.version.len() <= MAX_LABEL_LEN
        && gvr.version.starts_with('v')
        && gvr
            .version
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !version_ok {
        return Err(ApiError::invalid_field(
            "version",
            format!(
                "{:?} is not an API version (v1, v1beta1, v1alpha1: 'v', lower-case letters \
                 and digits, at most {MAX_LABEL_LEN} characters)",
                gvr.version
            ),
        ));
    }
    if !is_label(gvr.resource) {
        return Err(ApiError::invalid_field(
            "resource",
            format!(
                "{:?} is not a resource plural (lower-case letters, digits and '-', at most \
                 {MAX_LABEL_LEN} characters)",
                gvr.resource
            ),
        ));
    }
    Ok(())
}

/// An [`Inside`] call once checked, authorized and prepared.
pub(super) struct Checked {
    pub(super) target: ResourceTarget,
    /// The list query (the default one when the call does not list).
    pub(super) query: ListQuery,
    /// The prepared body (`null` when the call writes none or patches).
    pub(super) body: Value,
    /// The prepared patch of a patch call.
    pub(super) patch: Option<Patch<Value>>,
    /// The resource the call is about.
    pub(super) resolved: Resolved,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_body_follows_the_kind_namespace_and_name() {
        let call = Inside::clusters("inst", Verb::Update, "update").named("cluster", "east");
        let clusters = Resolved::clusters();
        let e = call.expected(&clusters);
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
        let configmaps = Resolved::of_kind(ResourceKind::Configmaps);
        let e = call.expected(&configmaps);
        assert_eq!(
            (e.api_version, e.kind, e.namespace, e.name),
            ("v1", "ConfigMap", Some("team-a"), None)
        );
        assert!(call.body.is_none() && call.options.is_none());
    }

    #[test]
    fn resource_spellings_table() {
        let gvr = |group, version, resource| Gvr {
            group,
            version,
            resource,
        };
        for (g, v, r, field) in [
            ("core", "v1", "configmaps", None),
            ("apps", "v1", "deployments", None),
            ("policy.karmada.io", "v1alpha1", "propagationpolicies", None),
            ("rbac.authorization.k8s.io", "v1", "clusterroles", None),
            ("", "v1", "pods", Some("group")),
            ("Apps", "v1", "deployments", Some("group")),
            ("apps", "1", "deployments", Some("version")),
            ("apps", "v1.2", "deployments", Some("version")),
            ("apps", "", "deployments", Some("version")),
            ("apps", "v1", "Deployments", Some("resource")),
            ("apps", "v1", "deployments/scale", Some("resource")),
            ("apps", "v1", "", Some("resource")),
        ] {
            let got = check_gvr(gvr(g, v, r)).err().map(|e| e.message);
            match field {
                None => assert_eq!(got, None, "{g}/{v}/{r}"),
                Some(field) => assert!(
                    got.as_deref().is_some_and(|m| m.contains(field)),
                    "{g}/{v}/{r}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn scope_table() {
        assert!(check_scope("nodes", false, None, true).is_ok());
        assert!(check_scope("nodes", false, Some("a"), false).is_err());
        assert!(check_scope("pods", true, None, false).is_ok());
        assert!(check_scope("pods", true, None, true).is_err());
        assert!(check_scope("pods", true, Some("a"), true).is_ok());
        assert!(check_scope("pods", true, Some("A"), true).is_err());
    }
}
