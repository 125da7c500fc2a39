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

/// Whose identity a write inside an instance carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WriteIdentity {
    /// The instance's own credentials with `Impersonate-User`/`Impersonate-Group`/`Impersonate-Uid`
    /// of the caller: the instance's RBAC decides and its audit log names the caller. The
    /// instance credentials then need only the `impersonate` verb.
    Impersonate,
    /// The instance's own credentials alone (Kairship's authorization is the only check).
    #[default]
    Instance,
}

impl WriteIdentity {
    /// The flag spelling (`impersonate`, `instance`).
    pub fn as_str(self) -> &'static str {
        match self {
            WriteIdentity::Impersonate => "impersonate",
            WriteIdentity::Instance => "instance",
        }
    }
}

impl std::str::FromStr for WriteIdentity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "impersonate" => Ok(WriteIdentity::Impersonate),
            "instance" => Ok(WriteIdentity::Instance),
            other => Err(format!(
                "unknown write identity {other:?} (expected impersonate or instance)"
            )),
        }
    }
}

/// Whether `name` is a header that asks the instance to impersonate someone: never taken from
/// a caller, only set by Kairship.
pub fn is_impersonation_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "impersonate-user"
        || name == "impersonate-group"
        || name == "impersonate-uid"
        || name.starts_with("impersonate-extra-")
}

/// The headers that make the instance act as `caller`. `system:authenticated` is left out: the
/// instance adds it itself.
pub fn impersonation_headers(caller: &Caller) -> Vec<(http::HeaderName, http::HeaderValue)> {
    let mut headers = Vec::new();
    let mut push = |name: &'static str, value: &str| {
        if let Ok(value) = http::HeaderValue::from_str(value) {
            headers.push((http::HeaderName::from_static(name), value));
        }
    };
    push("impersonate-user", &caller.user);
    for group in caller
        .groups
        .iter()
        .filter(|g| g.as_str() != "system:authenticated")
    {
        push("impersonate-group", group);
    }
    if let Some(uid) = &caller.uid {
        push("impersonate-uid", uid);
    }
    headers
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

    #[test]
    fn impersonation_headers_name_the_caller() {
        let mut caller = Caller::new("jane", vec!["team-a".into(), "system:authenticated".into()]);
        caller.uid = Some("u-7".into());
        let headers: Vec<(String, String)> = impersonation_headers(&caller)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        assert_eq!(
            headers,
            vec![
                ("impersonate-user".to_owned(), "jane".to_owned()),
                ("impersonate-group".to_owned(), "team-a".to_owned()),
                ("impersonate-uid".to_owned(), "u-7".to_owned()),
            ]
        );
        for (name, is) in [
            ("Impersonate-User", true),
            ("impersonate-group", true),
            ("Impersonate-Extra-scopes", true),
            ("impersonate-uid", true),
            ("authorization", false),
            ("x-impersonate-user", false),
        ] {
            assert_eq!(is_impersonation_header(name), is, "{name}");
        }
        for (text, want) in [
            ("impersonate", Ok(WriteIdentity::Impersonate)),
            ("instance", Ok(WriteIdentity::Instance)),
        ] {
            assert_eq!(text.parse::<WriteIdentity>(), want);
        }
        assert!("kairship".parse::<WriteIdentity>().is_err());
    }
}
