//! Bearer tokens checked with TokenReview on the host cluster.

use std::time::Instant;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::Api;
use kube::api::PostParams;

use super::cache::{ReviewCacheConfig, TtlCache, token_digest};
use crate::access::{AccessError, Authenticator, Caller};

/// Authenticates bearer tokens by creating a `TokenReview` on the host cluster, as
/// kube-apiserver's webhook token authenticator does. Answers, positive and negative, are
/// reused for a short while (10 s by default) keyed by the token's SHA-256 digest; failures to
/// reach the host are not cached and map to [`AccessError::Unavailable`].
pub struct TokenReviewAuthenticator {
    reviews: Api<TokenReview>,
    audiences: Vec<String>,
    config: ReviewCacheConfig,
    cache: TtlCache<[u8; 32], Result<Caller, String>>,
}

impl std::fmt::Debug for TokenReviewAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenReviewAuthenticator")
            .field("audiences", &self.audiences)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl TokenReviewAuthenticator {
    /// Reviews through `host` (a client of the host cluster allowed to create
    /// `authentication.k8s.io/tokenreviews`) with the default cache.
    pub fn new(host: kube::Client) -> Self {
        Self::with_config(host, ReviewCacheConfig::default())
    }

    /// Reviews with the given cache configuration.
    pub fn with_config(host: kube::Client, config: ReviewCacheConfig) -> Self {
        TokenReviewAuthenticator {
            reviews: Api::all(host),
            audiences: Vec::new(),
            config,
            cache: TtlCache::new(config.capacity),
        }
    }

    /// Asks the host to check that tokens are meant for one of `audiences` (empty: the host
    /// apiserver's own audiences).
    pub fn with_audiences(mut self, audiences: Vec<String>) -> Self {
        self.audiences = audiences;
        self
    }

    async fn review(&self, token: &str) -> Result<Result<Caller, String>, AccessError> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: (!self.audiences.is_empty()).then(|| self.audiences.clone()),
            },
            ..TokenReview::default()
        };
        let answer = self
            .reviews
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| {
                AccessError::Unavailable(format!("TokenReview on the host cluster failed: {e}"))
            })?;
        Ok(caller_from_review(&answer))
    }
}

/// The caller a TokenReview answer names, or why it names nobody.
pub fn caller_from_review(review: &TokenReview) -> Result<Caller, String> {
    let Some(status) = &review.status else {
        return Err("the TokenReview has no status".into());
    };
    if status.authenticated != Some(true) {
        return Err(status
            .error
            .clone()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| "the token was not accepted".into()));
    }
    let user = status.user.as_ref();
    let name = user
        .and_then(|u| u.username.clone())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| "the TokenReview authenticated no user name".to_owned())?;
    Ok(Caller {
        user: name,
        groups: user.and_then(|u| u.groups.clone()).unwrap_or_default(),
        uid: user.and_then(|u| u.uid.clone()).filter(|u| !u.is_empty()),
    })
}

#[async_trait]
impl Authenticator for TokenReviewAuthenticator {
    async fn authenticate(&self, bearer_token: &str) -> Result<Caller, AccessError> {
        if bearer_token.is_empty() {
            return Err(AccessError::Unauthenticated("no bearer token".into()));
        }
        let key = token_digest(bearer_token);
        let answer = match self.cache.get(&key) {
            Some(answer) => answer,
            None => {
                let asked = Instant::now();
                let answer = self.review(bearer_token).await?;
                let ttl = self.config.ttl(answer.is_ok());
                self.cache.insert_at(key, answer.clone(), asked, ttl);
                match &answer {
                    Ok(caller) => {
                        tracing::debug!(user = %caller.user, "token reviewed: authenticated")
                    }
                    Err(reason) => tracing::debug!(%reason, "token reviewed: not authenticated"),
                }
                answer
            }
        };
        answer.map_err(AccessError::Unauthenticated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::{TokenReviewStatus, UserInfo};

    fn review(status: Option<TokenReviewStatus>) -> TokenReview {
        TokenReview {
            status,
            ..TokenReview::default()
        }
    }

    #[test]
    fn reads_callers_from_review_answers() {
        let user = |name: &str, uid: Option<&str>| UserInfo {
            username: Some(name.into()),
            uid: uid.map(str::to_owned),
            groups: Some(vec!["g".into()]),
            extra: None,
        };
        let cases = [
            (review(None), Err("no status")),
            (
                review(Some(TokenReviewStatus {
                    authenticated: Some(false),
                    error: Some("invalid bearer token".into()),
                    ..Default::default()
                })),
                Err("invalid bearer token"),
            ),
            (
                review(Some(TokenReviewStatus::default())),
                Err("not accepted"),
            ),
            (
                review(Some(TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(user("", None)),
                    ..Default::default()
                })),
                Err("no user name"),
            ),
            (
                review(Some(TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(user("alice", Some("u1"))),
                    ..Default::default()
                })),
                Ok(("alice", Some("u1"))),
            ),
            (
                review(Some(TokenReviewStatus {
                    authenticated: Some(true),
                    user: Some(user("bob", Some(""))),
                    ..Default::default()
                })),
                Ok(("bob", None)),
            ),
        ];
        for (answer, want) in cases {
            match (caller_from_review(&answer), want) {
                (Ok(caller), Ok((name, uid))) => {
                    assert_eq!(caller.user, name);
                    assert_eq!(caller.uid.as_deref(), uid);
                    assert_eq!(caller.groups, ["g"]);
                }
                (Err(reason), Err(part)) => assert!(reason.contains(part), "{reason}"),
                (got, want) => panic!("{got:?} vs {want:?}"),
            }
        }
    }
}
