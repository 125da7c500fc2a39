//! Who is calling and what they may do: the contract between the API server's transports
//! (REST, gRPC, native proxy) and the authentication/authorization implementations.
//!
//! Transports turn a request's credentials into a [`Caller`] with an [`Authenticator`], then
//! ask an [`Authorizer`] before touching an instance. Implementations live in [`crate::auth`]
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

/// Decides whether a caller may apply a verb to `kairship.io/instances` (all instances when
/// `instance` is `None`, as for listing them or creating one).
#[async_trait]
pub trait Authorizer: Send + Sync {
    /// `Ok(true)` when allowed, `Ok(false)` when denied.
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        instance: Option<&str>,
    ) -> Result<bool, AccessError>;
}

/// An [`Authorizer`] that allows everything, for development servers and tests that are not
/// about access control.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

#[async_trait]
impl Authorizer for AllowAll {
    async fn allowed(&self, _: &Caller, _: Verb, _: Option<&str>) -> Result<bool, AccessError> {
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
}
