//! Who is calling and whether they may, as the kubelet decides it in webhook mode.
//!
//! Authentication: a client certificate verified against the configured CA (user = CN,
//! groups = O), else a bearer token checked with a TokenReview on the computing cluster;
//! nothing else is accepted (anonymous requests get 401). Authorization: a
//! SubjectAccessReview on the computing cluster for `nodes/<subresource>` of the virtual
//! node with the kubelet's verb and subresource (`stats` for `/stats/*`, `metrics` for
//! `/metrics/*`, `proxy` for logs, exec, attach and port-forward), for certificate and token
//! users alike. Review results are cached briefly; tokens are kept only as SHA-256 digests
//! and never logged.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use http::{HeaderMap, Method, header};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

use super::request::Endpoint;
use super::x509::CertificateSubject;

/// The group every authenticated user belongs to.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// An authenticated user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// User name.
    pub username: String,
    /// UID, if the authenticator knows one.
    pub uid: Option<String>,
    /// Groups.
    pub groups: Vec<String>,
    /// Extra attributes from the TokenReview.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user with [`AUTHENTICATED_GROUP`] added if missing.
    fn authenticated(mut self) -> UserInfo {
        if !self.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            self.groups.push(AUTHENTICATED_GROUP.to_owned());
        }
        self
    }
}

/// What a client presented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credentials {
    /// A verified client certificate whose subject names a user.
    Certificate(UserInfo),
    /// A bearer token to review.
    Token(String),
    /// A verified certificate without a usable subject.
    UnreadableCertificate,
    /// Nothing usable.
    Anonymous,
}

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// No accepted credentials (401).
    #[error("Unauthorized")]
    Unauthenticated,
    /// The user may not do this (403).
    #[error(
        "Forbidden (user={user}, verb={verb}, resource=nodes, subresource={subresource}, node={node})"
    )]
    Forbidden {
        /// User name.
        user: String,
        /// Verb.
        verb: &'static str,
        /// Subresource.
        subresource: &'static str,
        /// Virtual node name (empty when not known).
        node: String,
    },
    /// The SubjectAccessReview could not be made (500).
    #[error(
        "Authorization error (user={user}, verb={verb}, resource=nodes, subresource={subresource}): {source}"
    )]
    Review {
        /// User name.
        user: String,
        /// Verb.
        verb: &'static str,
        /// Subresource.
        subresource: &'static str,
        /// The API error.
        source: kube::Error,
    },
}

/// The credentials of a request: a certificate subject wins over a bearer token, and a
/// token counts only when token review is enabled. `certificate` is `None` without a client
/// certificate and `Some(None)` when its subject could not be read.
pub fn credentials(
    certificate: Option<Option<&CertificateSubject>>,
    headers: &HeaderMap,
    token_review: bool,
) -> Credentials {
    match certificate {
        Some(Some(subject)) => Credentials::Certificate(
            UserInfo {
                username: subject.common_name.clone(),
                groups: subject.organizations.clone(),
                ..UserInfo::default()
            }
            .authenticated(),
        ),
        Some(None) => Credentials::UnreadableCertificate,
        None => match bearer_token(headers) {
            Some(token) if token_review => Credentials::Token(token.to_owned()),
            _ => Credentials::Anonymous,
        },
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The verb and `nodes` subresource the kubelet authorizes a request as.
pub fn authorization_attributes(
    endpoint: Endpoint,
    method: &Method,
) -> (&'static str, &'static str) {
    let verb = match *method {
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "get",
    };
    let subresource = match endpoint {
        Endpoint::StatsSummary => "stats",
        Endpoint::MetricsResource | Endpoint::MetricsCadvisor => "metrics",
        Endpoint::Healthz => "healthz",
        _ => "proxy",
    };
    (verb, subresource)
}

/// A map whose entries expire; bounded so that a flood of distinct keys cannot grow it.
struct TtlCache<K, V> {
    ttl: Duration,
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

const CACHE_LIMIT: usize = 4096;

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    fn new(ttl: Duration) -> Self {
        TtlCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, value)| value.clone())
    }

    fn insert(&self, key: K, value: V) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CACHE_LIMIT {
            entries.retain(|_, (at, _)| at.elapsed() < self.ttl);
            if entries.len() >= CACHE_LIMIT {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now(), value));
    }
}

type AccessKey = (String, Vec<String>, &'static str, &'static str, String);

/// Authenticates and authorizes requests against the computing cluster.
pub struct Authenticator {
    computing: Client,
    audiences: Vec<String>,
    tokens: TtlCache<[u8; 32], Option<UserInfo>>,
    decisions: TtlCache<AccessKey, bool>,
}

impl Authenticator {
    /// Reviews through `computing`, expecting `audiences` in tokens (any when empty), and
    /// caches review results for `ttl`.
    pub fn new(computing: Client, audiences: Vec<String>, ttl: Duration) -> Authenticator {
        Authenticator {
            computing,
            audiences,
            tokens: TtlCache::new(ttl),
            decisions: TtlCache::new(ttl),
        }
    }

    /// The user behind `credentials`.
    pub async fn authenticate(&self, credentials: Credentials) -> Result<UserInfo, AuthError> {
        match credentials {
            Credentials::Certificate(user) => Ok(user),
            Credentials::Token(token) => self.review_token(&token).await,
            Credentials::UnreadableCertificate | Credentials::Anonymous => {
                Err(AuthError::Unauthenticated)
            }
        }
    }

    async fn review_token(&self, token: &str) -> Result<UserInfo, AuthError> {
        let digest: [u8; 32] = {
            let hash = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
            let mut out = [0u8; 32];
            out.copy_from_slice(hash.as_ref());
            out
        };
        if let Some(cached) = self.tokens.get(&digest) {
            return cached.ok_or(AuthError::Unauthenticated);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: (!self.audiences.is_empty()).then(|| self.audiences.clone()),
            },
            ..TokenReview::default()
        };
        let reviewed = Api::<TokenReview>::all(self.computing.clone())
            .create(&PostParams::default(), &review)
            .await;
        let user = match reviewed {
            Ok(reviewed) => token_review_user(&reviewed),
            Err(err) => {
                // Not cached: the next request asks again.
                tracing::warn!(error = %kube_kit::client::describe_kube_error(&err), "TokenReview failed");
                return Err(AuthError::Unauthenticated);
            }
        };
        self.tokens.insert(digest, user.clone());
        user.ok_or(AuthError::Unauthenticated)
    }

    /// Whether `user` may `verb` the `nodes/<subresource>` of `node`.
    pub async fn authorize(
        &self,
        user: &UserInfo,
        verb: &'static str,
        subresource: &'static str,
        node: &str,
    ) -> Result<(), AuthError> {
        let key: AccessKey = (
            user.username.clone(),
            user.groups.clone(),
            verb,
            subresource,
            node.to_owned(),
        );
        let allowed = match self.decisions.get(&key) {
            Some(allowed) => allowed,
            None => {
                let review = access_review(user, verb, subresource, node);
                let reviewed = Api::<SubjectAccessReview>::all(self.computing.clone())
                    .create(&PostParams::default(), &review)
                    .await
                    .map_err(|source| AuthError::Review {
                        user: user.username.clone(),
                        verb,
                        subresource,
                        source,
                    })?;
                let allowed = reviewed.status.is_some_and(|s| s.allowed);
                self.decisions.insert(key, allowed);
                allowed
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(AuthError::Forbidden {
                user: user.username.clone(),
                verb,
                subresource,
                node: node.to_owned(),
            })
        }
    }
}

/// The user a TokenReview answer authenticates, if any.
pub fn token_review_user(review: &TokenReview) -> Option<UserInfo> {
    let status = review.status.as_ref()?;
    if status.authenticated != Some(true) {
        return None;
    }
    let user = status.user.as_ref()?;
    let username = user.username.clone().filter(|u| !u.is_empty())?;
    Some(
        UserInfo {
            username,
            uid: user.uid.clone().filter(|u| !u.is_empty()),
            groups: user.groups.clone().unwrap_or_default(),
            extra: user.extra.clone().unwrap_or_default(),
        }
        .authenticated(),
    )
}

/// The SubjectAccessReview for `user` doing `verb` on `nodes/<subresource>` of `node`.
pub fn access_review(
    user: &UserInfo,
    verb: &str,
    subresource: &str,
    node: &str,
) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.username.clone()),
            uid: user.uid.clone(),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.to_owned()),
                version: Some("v1".to_owned()),
                resource: Some("nodes".to_owned()),
                subresource: Some(subresource.to_owned()),
                name: (!node.is_empty()).then(|| node.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use serde_json::json;

    fn headers(authorization: Option<&str>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(value) = authorization {
            headers.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn bearer_tokens() {
        for (header, want) in [
            (Some("Bearer abc"), Some("abc")),
            (Some("bearer  abc "), Some("abc")),
            (Some("Bearer "), None),
            (Some("Basic YWxpY2U6cHc="), None),
            (Some("Bearer"), None),
            (None, None),
        ] {
            assert_eq!(bearer_token(&headers(header)), want, "{header:?}");
        }
    }

    #[test]
    fn credential_precedence() {
        let subject = CertificateSubject {
            common_name: "kube-apiserver-kubelet-client".into(),
            organizations: vec!["system:masters".into()],
        };
        let cert_user = Credentials::Certificate(UserInfo {
            username: "kube-apiserver-kubelet-client".into(),
            groups: vec!["system:masters".into(), AUTHENTICATED_GROUP.into()],
            ..UserInfo::default()
        });
        let token = headers(Some("Bearer t0k"));
        let none = headers(None);
        let cases = [
            (Some(Some(&subject)), &token, true, cert_user.clone()),
            (Some(Some(&subject)), &none, false, cert_user),
            (Some(None), &token, true, Credentials::UnreadableCertificate),
            (None, &token, true, Credentials::Token("t0k".into())),
            (None, &token, false, Credentials::Anonymous),
            (None, &none, true, Credentials::Anonymous),
        ];
        for (certificate, headers, review, want) in cases {
            assert_eq!(
                credentials(certificate, headers, review),
                want,
                "{certificate:?} {review}"
            );
        }
    }

    #[test]
    fn attributes_follow_the_kubelet() {
        for (endpoint, method, want) in [
            (Endpoint::ContainerLogs, Method::GET, ("get", "proxy")),
            (Endpoint::Exec, Method::POST, ("create", "proxy")),
            (Endpoint::Exec, Method::GET, ("get", "proxy")),
            (Endpoint::Attach, Method::POST, ("create", "proxy")),
            (Endpoint::PortForward, Method::POST, ("create", "proxy")),
            (Endpoint::StatsSummary, Method::GET, ("get", "stats")),
            (Endpoint::MetricsResource, Method::GET, ("get", "metrics")),
            (Endpoint::MetricsCadvisor, Method::GET, ("get", "metrics")),
            (Endpoint::Healthz, Method::HEAD, ("get", "healthz")),
            (Endpoint::Unknown, Method::DELETE, ("delete", "proxy")),
        ] {
            assert_eq!(
                authorization_attributes(endpoint, &method),
                want,
                "{endpoint:?} {method}"
            );
        }
    }

    #[test]
    fn token_reviews_read() {
        let review = |status| -> TokenReview {
            serde_json::from_value(json!({"spec": {}, "status": status})).unwrap()
        };
        assert_eq!(
            token_review_user(&review(json!({"authenticated": true,
                "user": {"username": "system:serviceaccount:kube-system:metrics-server", "uid": "u1",
                         "groups": ["system:serviceaccounts"], "extra": {"k": ["v"]}}}))),
            Some(UserInfo {
                username: "system:serviceaccount:kube-system:metrics-server".into(),
                uid: Some("u1".into()),
                groups: vec!["system:serviceaccounts".into(), AUTHENTICATED_GROUP.into()],
                extra: BTreeMap::from([("k".to_owned(), vec!["v".to_owned()])]),
            })
        );
        assert_eq!(
            token_review_user(&review(json!({"authenticated": false, "error": "bad"}))),
            None
        );
        assert_eq!(
            token_review_user(&review(
                json!({"authenticated": true, "user": {"username": ""}})
            )),
            None
        );
        assert_eq!(token_review_user(&review(json!(null))), None);
    }

    #[test]
    fn access_reviews_name_the_node() {
        let user = UserInfo {
            username: "alice".into(),
            groups: vec!["dev".into()],
            ..UserInfo::default()
        };
        let review =
            serde_json::to_value(access_review(&user, "create", "proxy", "vnode-1")).unwrap();
        assert_eq!(
            review["spec"]["resourceAttributes"],
            json!({"verb": "create", "version": "v1", "resource": "nodes", "subresource": "proxy", "name": "vnode-1"})
        );
        assert_eq!(review["spec"]["user"], "alice");
        assert_eq!(review["spec"]["groups"], json!(["dev"]));
        assert!(review["spec"].get("extra").is_none());
        let unnamed = serde_json::to_value(access_review(&user, "get", "stats", "")).unwrap();
        assert!(unnamed["spec"]["resourceAttributes"].get("name").is_none());
    }

    #[test]
    fn caches_expire_and_stay_bounded() {
        let cache = TtlCache::new(Duration::from_millis(50));
        cache.insert(1u32, "a");
        assert_eq!(cache.get(&1), Some("a"));
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get(&1), None);
        for key in 0..(CACHE_LIMIT as u32 + 10) {
            cache.insert(key, "x");
        }
        assert!(cache.entries.lock().unwrap().len() <= CACHE_LIMIT);
        let disabled = TtlCache::new(Duration::ZERO);
        disabled.insert(1u32, "a");
        assert_eq!(disabled.get(&1), None);
    }
}
