//! The Kairship console: server-rendered HTML under `/ui/` on the API server's port, made
//! live with htmx (embedded, like the stylesheet: no page needs the internet).
//!
//! Every page is built from [`KairshipApi`] answers, so the console applies exactly the
//! API's rules: a refused call shows the API's message. The [`Authorizer`] the service uses
//! is asked only to decide which write controls to show (a viewer sees none); the service
//! still checks every call.
//!
//! Sign-in takes a bearer token the API accepts (pasted, or an ID token from an OpenID
//! Connect issuer, [`oidc`]) and seals it, with a session id and a CSRF
//! token, into an encrypted cookie any replica can open ([`session`]; keys and sign-outs in
//! the host cluster, [`session_store`]); every POST carries the session's CSRF token.
//!
//! Pages are organised by the API's features, each a module serving its routes:
//! [`instances`], [`members`], [`workloads`], [`applications`], [`audit`], [`search`]; what
//! they share is in [`request`] (state, sign-in, CSRF), [`page`] (layout), [`merge`] (an edit
//! form's change merged into the stored object) and [`pictures`] (placement drawn as SVG).
//! [`shell`]
//! serves sign-in, sign-out and the assets.

pub mod applications;
pub mod audit;
pub mod browser;
pub mod drift;
pub mod events;
pub mod form;
pub mod html;
pub mod instances;
pub mod member_workloads;
pub mod members;
pub mod merge;
pub mod oidc;
pub mod page;
pub mod pictures;
pub mod placement;
pub mod pods;
pub mod policies;
pub mod request;
pub mod search;
pub mod session;
pub mod session_store;
pub mod shell;
pub mod workloads;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use self::request::Console;
use self::session::{SessionStore, Sessions};
use crate::access::{Authenticator, Authorizer};
use crate::api::KairshipApi;

pub use self::instances::{NAMESPACE_SAMPLE, WORKLOADS_PAGE_SIZE};
pub use self::page::{PREFIX, Viewer};
pub use self::shell::{CONSOLE_CSS, CONSOLE_JS, CONTENT_SECURITY_POLICY, HTMX_JS, HTMX_LICENSE};

/// What the console is built on.
pub struct ConsoleParts {
    /// The service (the same one REST and gRPC call).
    pub api: Arc<dyn KairshipApi>,
    /// Checks the tokens users sign in with, and each request's session token.
    pub authenticator: Arc<dyn Authenticator>,
    /// The service's authorizer, asked only which write controls to show.
    pub authorizer: Arc<dyn Authorizer>,
    /// How long a session lasts.
    pub session_ttl: Duration,
    /// The session keys and the sign-outs, shared by every replica.
    pub session_store: Arc<dyn SessionStore>,
    /// Sign-in through an OpenID Connect issuer, besides pasting a token.
    pub oidc: Option<crate::auth::OidcSignIn>,
}

impl std::fmt::Debug for ConsoleParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleParts")
            .field("session_ttl", &self.session_ttl)
            .finish_non_exhaustive()
    }
}

/// The console's routes, all under `/ui`.
pub fn routes(parts: ConsoleParts) -> Router {
    let console = Arc::new(Console {
        api: parts.api,
        authenticator: parts.authenticator,
        authorizer: parts.authorizer,
        sessions: Sessions::new(parts.session_store, parts.session_ttl),
        oidc: parts.oidc,
    });
    Router::new()
        .merge(shell::routes())
        .merge(oidc::routes())
        .merge(instances::routes())
        .merge(instances::forms::routes())
        .merge(instances::kubeconfig::routes())
        .merge(members::routes())
        .merge(member_workloads::routes())
        .merge(workloads::routes())
        .merge(applications::routes())
        .merge(browser::routes())
        .merge(pods::routes())
        .merge(placement::routes())
        .merge(policies::routes())
        .merge(drift::routes())
        .merge(audit::routes())
        .merge(events::routes())
        .merge(search::routes())
        .layer(axum::middleware::map_response(shell::security_headers))
        .with_state(console)
}
