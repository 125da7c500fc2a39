//! Several authenticators tried in order.

use std::sync::Arc;

use async_trait::async_trait;

use crate::access::{AccessError, Authenticator, Caller};

/// Tries each authenticator in turn (typically a [`StaticTokenAuthenticator`] and then a
/// [`TokenReviewAuthenticator`]); the first that identifies the caller wins. When none does,
/// the answer is [`AccessError::Unavailable`] if any of them could not decide, else
/// [`AccessError::Unauthenticated`].
///
/// [`StaticTokenAuthenticator`]: super::StaticTokenAuthenticator
/// [`TokenReviewAuthenticator`]: super::TokenReviewAuthenticator
#[derive(Clone, Default)]
pub struct ChainAuthenticator {
    links: Vec<Arc<dyn Authenticator>>,
}

impl std::fmt::Debug for ChainAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainAuthenticator")
            .field("links", &self.links.len())
            .finish()
    }
}

impl ChainAuthenticator {
    /// Tries `links` in order.
    pub fn new(links: Vec<Arc<dyn Authenticator>>) -> Self {
        ChainAuthenticator { links }
    }

    /// Appends an authenticator tried after the others.
    pub fn then(mut self, link: Arc<dyn Authenticator>) -> Self {
        self.links.push(link);
        self
    }
}

#[async_trait]
impl Authenticator for ChainAuthenticator {
    async fn authenticate(&self, bearer_token: &str) -> Result<Caller, AccessError> {
        let mut unavailable = None;
        for link in &self.links {
            match link.authenticate(bearer_token).await {
                Ok(caller) => return Ok(caller),
                Err(AccessError::Unavailable(reason)) => unavailable = Some(reason),
                Err(_) => {}
            }
        }
        Err(match unavailable {
            Some(reason) => AccessError::Unavailable(reason),
            None => {
                AccessError::Unauthenticated("no authenticator accepted the bearer token".into())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers one token, or fails every call with the given error.
    struct Fixed {
        token: &'static str,
        user: &'static str,
        otherwise: AccessError,
    }

    #[async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
            if token == self.token {
                Ok(Caller::new(self.user, vec![]))
            } else {
                Err(self.otherwise.clone())
            }
        }
    }

    fn link(
        token: &'static str,
        user: &'static str,
        otherwise: AccessError,
    ) -> Arc<dyn Authenticator> {
        Arc::new(Fixed {
            token,
            user,
            otherwise,
        })
    }

    #[tokio::test]
    async fn first_acceptance_wins_and_unavailability_is_reported() {
        let unauth = || AccessError::Unauthenticated("no".into());
        let down = || AccessError::Unavailable("down".into());
        let chain = ChainAuthenticator::new(vec![
            link("a", "static-a", unauth()),
            link("a", "review-a", unauth()),
        ])
        .then(link("b", "review-b", unauth()));
        let cases = [
            (&chain, "a", Ok("static-a")),
            (&chain, "b", Ok("review-b")),
            (&chain, "c", Err(unauth())),
        ];
        let flaky = ChainAuthenticator::new(vec![
            link("a", "static-a", unauth()),
            link("b", "review-b", down()),
        ]);
        let empty = ChainAuthenticator::default();
        let more = [
            (&flaky, "a", Ok("static-a")),
            (&flaky, "b", Ok("review-b")),
            (&flaky, "c", Err(down())),
            (&empty, "a", Err(unauth())),
        ];
        for (chain, token, want) in cases.into_iter().chain(more) {
            let got = chain.authenticate(token).await.map(|c| c.user);
            match (got, want) {
                (Ok(user), Ok(want)) => assert_eq!(user, want, "{token}"),
                (Err(AccessError::Unavailable(_)), Err(AccessError::Unavailable(_)))
                | (Err(AccessError::Unauthenticated(_)), Err(AccessError::Unauthenticated(_))) => {}
                (got, want) => panic!("{token}: {got:?} vs {want:?}"),
            }
        }
    }
}
