//! Authentication and authorization of API callers.
//!
//! Implementations of the [`crate::access`] contract:
//! - [`TokenReviewAuthenticator`]: bearer tokens checked by a `TokenReview` on the host cluster;
//! - [`StaticTokenAuthenticator`]: a kube-apiserver `--token-auth-file` CSV, for development;
//! - [`ChainAuthenticator`]: the static file first, then TokenReview;
//! - [`SubjectAccessReviewAuthorizer`]: a `SubjectAccessReview` for `kairship.io/instances`
//!   with the instance name and verb, so that host RBAC decides;
//! - [`StaticAuthorizer`]: a small fixed policy, for development;
//! - [`oidc`]: OpenID Connect ID token verification and claim mapping, and [`OidcIssuer`], an
//!   issuer's documents, the console's code exchange and an authenticator of its ID tokens.
//!
//! Review answers are cached briefly ([`ReviewCacheConfig`]); tokens are never logged and are
//! kept only as SHA-256 digests.

mod cache;
mod chain;
pub mod oidc;
mod oidc_issuer;
mod policy;
mod sar;
mod token_file;
mod token_review;

pub use cache::ReviewCacheConfig;
pub use chain::ChainAuthenticator;
pub use oidc_issuer::{
    AUTHENTICATED_GROUP, IssuerEndpoints, OidcIssuer, OidcIssuerConfig, OidcSignIn,
    issuer_url_allowed, unverified_issuer,
};
pub use policy::{PolicyError, PolicyRule, StaticAuthorizer, Subject, parse_policy};
pub use sar::{
    INSTANCES_GROUP, INSTANCES_RESOURCE, ReviewKey, SubjectAccessReviewAuthorizer,
    instance_access_review,
};
pub use token_file::{StaticTokenAuthenticator, TokenEntry, TokenFileError, parse_token_file};
pub use token_review::{TokenReviewAuthenticator, caller_from_review};
