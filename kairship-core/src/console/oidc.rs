//! Console sign-in through an OpenID Connect issuer: the authorization-code flow with PKCE,
//! `state` and `nonce` (OpenID Connect Core 1.0 section 3.1; RFC 7636).
//!
//! The sign-in in progress (state, nonce, PKCE verifier) is sealed with the session keys into
//! a cookie of its own, `SameSite=Lax` so the browser sends it back on the issuer's redirect,
//! limited to `/ui/oidc` and ten minutes: the replica that receives the callback needs no
//! memory of the start. The session then holds the ID token as its bearer token, so every
//! console call is authenticated as the same token would be on the API, and it ends when the
//! token expires.

use axum::Router;
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

use super::html::Html;
use super::page::{page, signin_page};
use super::request::{Shared, html};
use super::session::{cookie_value, secrets_equal, session_cookie, unix_now};
use crate::api::{ApiError, BearerToken};
use crate::auth::oidc::Pkce;
use crate::transport::ServedOverTls;

pub use crate::auth::OidcSignIn;

/// The cookie holding a sign-in in progress.
pub const PENDING_COOKIE: &str = "kairship_oidc";
/// Where the issuer sends the browser back.
pub const CALLBACK_PATH: &str = "/ui/oidc/callback";
/// How long a sign-in may take at the issuer.
const PENDING_SECONDS: u64 = 600;

/// A sign-in in progress, as sealed in [`PENDING_COOKIE`].
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    redirect_uri: String,
    exp: u64,
}

fn random_token(rng: &SystemRandom) -> Option<String> {
    let mut bytes = [0u8; 24];
    rng.fill(&mut bytes).ok()?;
    Some(crate::naming::hex_encode(&bytes))
}

/// The callback URL for a request that reached this server with `headers`.
fn redirect_uri(signin: &OidcSignIn, headers: &HeaderMap, tls: bool) -> Option<String> {
    if let Some(url) = &signin.redirect_url {
        return Some(url.clone());
    }
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let scheme = if tls { "https" } else { "http" };
    Some(format!("{scheme}://{host}{CALLBACK_PATH}"))
}

fn pending_cookie(value: &str, tls: bool, max_age: u64) -> String {
    format!(
        "{PENDING_COOKIE}={value}; Path=/ui/oidc; Max-Age={max_age}; HttpOnly; SameSite=Lax{}",
        if tls { "; Secure" } else { "" }
    )
}

fn failed(status: StatusCode, message: &str) -> Response {
    html(status, signin_page(Some(message), true))
}

/// `GET /ui/oidc/signin`: sends the browser to the issuer.
async fn start(
    State(console): State<Shared>,
    tls: Option<axum::Extension<ServedOverTls>>,
    headers: HeaderMap,
) -> Response {
    let Some(signin) = &console.oidc else {
        return html(StatusCode::NOT_FOUND, signin_page(None, false));
    };
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let rng = SystemRandom::new();
    let (Some(state), Some(nonce), Some(pkce), Some(redirect_uri)) = (
        random_token(&rng),
        random_token(&rng),
        Pkce::generate(&rng),
        redirect_uri(signin, &headers, tls),
    ) else {
        return failed(
            StatusCode::BAD_REQUEST,
            "Cannot start an OIDC sign-in here.",
        );
    };
    let url = match signin
        .issuer
        .authorization_url(&redirect_uri, &state, &nonce, &pkce.challenge)
        .await
    {
        Ok(url) => url,
        Err(err) => return failed(StatusCode::SERVICE_UNAVAILABLE, &err.to_string()),
    };
    let pending = Pending {
        state,
        nonce,
        verifier: pkce.verifier,
        redirect_uri,
        exp: unix_now() + PENDING_SECONDS,
    };
    let sealed = match console.sessions.seal_value(&pending).await {
        Ok(sealed) => sealed,
        Err(err) => return failed(StatusCode::SERVICE_UNAVAILABLE, &err.to_string()),
    };
    let mut response = html(StatusCode::SEE_OTHER, String::new());
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&url) {
        headers.insert(header::LOCATION, location);
    }
    if let Ok(cookie) = HeaderValue::from_str(&pending_cookie(&sealed, tls, PENDING_SECONDS)) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

/// What the issuer sends back.
#[derive(Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /ui/oidc/callback`: checks the state, exchanges the code, verifies the ID token and
/// its nonce, and starts the session.
async fn callback(
    State(console): State<Shared>,
    tls: Option<axum::Extension<ServedOverTls>>,
    headers: HeaderMap,
    Query(answer): Query<Callback>,
) -> Response {
    let Some(signin) = &console.oidc else {
        return html(StatusCode::NOT_FOUND, signin_page(None, false));
    };
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    if let Some(error) = &answer.error {
        let detail = answer.error_description.as_deref().unwrap_or_default();
        return failed(
            StatusCode::UNAUTHORIZED,
            &format!("The issuer refused the sign-in: {error} {detail}"),
        );
    }
    let pending: Option<Pending> = match cookie_value(&headers, PENDING_COOKIE) {
        Some(cookie) => match console.sessions.open_value(cookie).await {
            Ok(pending) => pending,
            Err(err) => return failed(StatusCode::SERVICE_UNAVAILABLE, &err.to_string()),
        },
        None => None,
    };
    let (Some(pending), Some(code), Some(state)) = (pending, &answer.code, &answer.state) else {
        return failed(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started here or has expired; start again.",
        );
    };
    if pending.exp <= unix_now() || !secrets_equal(&pending.state, state) {
        return failed(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started here or has expired; start again.",
        );
    }
    let id_token = match signin
        .issuer
        .exchange_code(code, &pending.verifier, &pending.redirect_uri)
        .await
    {
        Ok(token) => token,
        Err(err) => return failed(StatusCode::UNAUTHORIZED, &err.to_string()),
    };
    let expires = match signin
        .issuer
        .verify(&id_token, Some(&pending.nonce), unix_now())
        .await
    {
        Ok((_, expires)) => expires,
        Err(err) => return failed(StatusCode::UNAUTHORIZED, &err.to_string()),
    };
    // The session's token goes to the API on every page: it must accept it as well.
    if let Err(err) = console.authenticator.authenticate(&id_token).await {
        let err = ApiError::from(err);
        return failed(StatusCode::UNAUTHORIZED, &err.message);
    }
    let (cookie, session) = match console
        .sessions
        .create_until(BearerToken::new(id_token), expires)
        .await
    {
        Ok(made) => made,
        Err(err) => return failed(StatusCode::SERVICE_UNAVAILABLE, &err.to_string()),
    };
    // A page, not a redirect: the session cookie is SameSite=Strict, and a navigation that
    // began at the issuer would not send it; this page's own navigation does.
    let mut h = Html::new();
    h.raw("<meta http-equiv=\"refresh\" content=\"0;url=/ui/instances\">")
        .raw("<section class=\"card narrow\"><h1>Signed in</h1>")
        .raw("<p><a id=\"continue\" href=\"/ui/instances\">Continue to the console</a></p></section>");
    let mut response = html(StatusCode::OK, page("Signed in", None, h));
    let response_headers = response.headers_mut();
    let lifetime = session.expires.saturating_sub(unix_now());
    for value in [
        session_cookie(&cookie, tls, std::time::Duration::from_secs(lifetime)),
        pending_cookie("", tls, 0),
    ] {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response_headers.append(header::SET_COOKIE, value);
        }
    }
    response
}

/// The sign-in routes (answering 404 when no issuer is configured).
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/ui/oidc/signin", get(start))
        .route(CALLBACK_PATH, get(callback))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_cookie_is_lax_short_and_scoped() {
        let c = pending_cookie("v", true, 600);
        assert!(c.contains("Path=/ui/oidc"));
        assert!(c.contains("SameSite=Lax"));
        assert!(c.contains("Max-Age=600"));
        assert!(c.ends_with("; Secure"));
        assert!(!pending_cookie("v", false, 0).contains("Secure"));
    }
}
