//! Who is calling and what they may do: the contract between the API server's transports
//! (REST, gRPC, native proxy) and the authentication/authorization implementations.
//!
//! Transports turn a request's credentials into a [`Caller`] with an [`Authenticator`], then
//! ask an [`Authorizer`] before touching an instance. A check names the verb, the instance and
//! what is acted on ([`InstanceResource`]): the Instance object itself (`instances`) or the
//! objects inside the instance (`instances/proxy`), as the per-instance roles grant them. Implementations live in [`crate::auth`]
//! (TokenReview / SubjectAccessReview on the host cluster, a static token file); tests and
//! embedded uses may supply their own.

use async_trait::async_trait;

/// An authenticated caller.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Caller {
    /// User name (`system:serviceaccount:ns:name` for service accounts).
    pub user: String,
    /// Groups the user belongs to.
    pub groups: Vec<String>,
    /// UID of the user, when the authenticator knows it.
    pub uid: Option<String>,
}

impl Caller {
    /// A caller with a user name and groups.
    pub fn new(user: impl Into<String>, groups: Vec<String>) -> Caller {
        Caller {
            user: user.into(),
            groups,
            uid: None,
        }
    }
}

/// Verbs checked on `kairship.io/instances`, as Kubernetes RBAC spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Read one instance or anything inside it.
    Get,
    /// List instances.
    List,
    /// Watch anything inside an instance.
    Watch,
    /// Create an instance or an object inside one.
    Create,
    /// Replace an instance or an object inside one.
    Update,
    /// Patch an instance or an object inside one.
    Patch,
    /// Delete an instance or an object inside one.
    Delete,
}

impl Verb {
    /// The RBAC spelling (`get`, `list`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }

    /// Whether the verb changes something.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete
        )
    }
}

/// What a check is about, as RBAC rules on `kairship.io` name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstanceResource {
    /// The Instance objects on the host cluster (`instances`): reading, listing, creating,
    /// updating and deleting instances, issuing kubeconfigs.
    Instances,
    /// The objects inside an instance (`instances/proxy`): member clusters, workloads,
    /// config, policies, deployment actions and everything the native proxy carries.
    Proxy,
}

impl InstanceResource {
    /// The resource RBAC rules name (`instances`).
    pub fn resource(self) -> &'static str {
        "instances"
    }

    /// The subresource (`proxy`), if any.
    pub fn subresource(self) -> Option<&'static str> {
        match self {
            InstanceResource::Instances => None,
            InstanceResource::Proxy => Some("proxy"),
        }
    }

    /// As an RBAC rule's `resources` entry spells it (`instances`, `instances/proxy`).
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceResource::Instances => "instances",
            InstanceResource::Proxy => "instances/proxy",
        }
    }
}

impl std::fmt::Display for InstanceResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a caller could not be authenticated or authorized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// No credentials, or credentials that do not identify anyone (HTTP 401).
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The caller may not do this (HTTP 403).
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// The review could not be made (HTTP 503): the host cluster did not answer.
    #[error("access review unavailable: {0}")]
    Unavailable(String),
}

/// Turns a bearer token into a [`Caller`].
#[async_trait]
pub trait Authenticator: Send + Sync {
    /// The caller the token identifies; [`AccessError::Unauthenticated`] when it identifies
    /// nobody. Implementations must never log the token.
    async fn authenticate(&self, bearer_token: &str) -> Result<Caller, AccessError>;
}

/// Decides whether a caller may apply a verb to `kairship.io/instances` or to
/// `kairship.io/instances/proxy` (see [`InstanceResource`]) of one instance, or of all
/// instances when `instance` is `None` (listing them or creating one).
#[async_trait]
pub trait Authorizer: Send + Sync {
    /// `Ok(true)` when allowed, `Ok(false)` when denied.
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError>;
}

/// An [`Authorizer`] that allows everything, for development servers and tests that are not
/// about access control.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

#[async_trait]
impl Authorizer for AllowAll {
    async fn allowed(
        &self,
        _: &Caller,
        _: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_spell_like_rbac_and_know_writes() {
        let cases = [
            (Verb::Get, "get", false),
            (Verb::List, "list", false),
            (Verb::Watch, "watch", false),
            (Verb::Create, "create", true),
            (Verb::Update, "update", true),
            (Verb::Patch, "patch", true),
            (Verb::Delete, "delete", true),
        ];
        for (verb, spelled, write) in cases {
            assert_eq!(verb.as_str(), spelled);
            assert_eq!(verb.is_write(), write, "{spelled}");
        }
    }

    #[test]
    fn resources_spell_like_rbac_rules() {
        let cases = [
            (InstanceResource::Instances, None, "instances"),
            (InstanceResource::Proxy, Some("proxy"), "instances/proxy"),
        ];
        for (resource, sub, spelled) in cases {
            assert_eq!(resource.resource(), "instances");
            assert_eq!(resource.subresource(), sub);
            assert_eq!(resource.to_string(), spelled);
        }
    }
}
