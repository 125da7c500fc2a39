//! The console's frame: sign-in and sign-out, the embedded assets and the security headers
//! of every answer.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::request::{
    Shared, SignedForm, forbidden, html, same_origin, see_other, status_of, unavailable,
};
use crate::api::{ApiError, BearerToken};
use crate::transport::ServedOverTls;

/// The htmx build served at `/ui/assets/htmx.min.js` (htmx.org 2.0.11 from the npm registry,
/// 0BSD: `assets/htmx.LICENSE`).
pub const HTMX_JS: &str = include_str!("assets/htmx.min.js");

/// htmx's license.
pub const HTMX_LICENSE: &str = include_str!("assets/htmx.LICENSE");

/// The console's stylesheet.
pub const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// The script every signed-in page loads: keyboard shortcuts, and the live parts' manners
/// (no refresh while the tab is hidden or a field inside is being typed into).
pub const CONSOLE_JS: &str = include_str!("assets/console.js");

/// The Content-Security-Policy of every console answer: only this origin, no inline script,
/// no eval, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

pub(in crate::console) async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

pub(in crate::console) async fn root(headers: HeaderMap) -> Response {
    see_other(&headers, "/ui/instances")
}

pub(in crate::console) async fn signin_form(State(console): State<Shared>) -> Response {
    html(
        StatusCode::OK,
        crate::console::page::signin_page(None, console.oidc.is_some()),
    )
}

pub(in crate::console) async fn signin(
    State(console): State<Shared>,
    tls: Option<axum::Extension<ServedOverTls>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !same_origin(&headers) {
        return forbidden("cross-site request refused");
    }
    let fields = crate::console::form::parse(&body);
    let token = fields.get("token").map(|t| t.trim()).unwrap_or_default();
    if token.is_empty() {
        return html(
            StatusCode::BAD_REQUEST,
            crate::console::page::signin_page(Some("Paste a token."), console.oidc.is_some()),
        );
    }
    if let Err(err) = console.authenticator.authenticate(token).await {
        let err = ApiError::from(err);
        return html(
            status_of(&err),
            crate::console::page::signin_page(Some(&err.message), console.oidc.is_some()),
        );
    }
    let cookie = match console.sessions.create(BearerToken::new(token)).await {
        Ok((cookie, _)) => cookie,
        Err(err) => {
            return html(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::console::page::signin_page(Some(&err.to_string()), console.oidc.is_some()),
            );
        }
    };
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let mut r = see_other(&HeaderMap::new(), "/ui/instances");
    if let Ok(v) = HeaderValue::from_str(&crate::console::session::session_cookie(
        &cookie,
        tls,
        console.sessions.ttl(),
    )) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

pub(in crate::console) async fn signout(
    State(console): State<Shared>,
    tls: Option<axum::Extension<ServedOverTls>>,
    SignedForm { signed, .. }: SignedForm,
) -> Response {
    if let Err(err) = console.sessions.revoke(&signed.session).await {
        return unavailable(&err.to_string());
    }
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let mut r = see_other(&HeaderMap::new(), "/ui/signin");
    if let Ok(v) = HeaderValue::from_str(&crate::console::session::cleared_cookie(tls)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

pub(in crate::console) async fn asset(Path(file): Path<String>) -> Response {
    let (body, content_type) = match file.as_str() {
        "htmx.min.js" => (HTMX_JS, "text/javascript; charset=utf-8"),
        "console.css" => (CONSOLE_CSS, "text/css; charset=utf-8"),
        "console.js" => (CONSOLE_JS, "text/javascript; charset=utf-8"),
        "htmx.LICENSE" => (HTMX_LICENSE, "text/plain; charset=utf-8"),
        "kubeconfig-file.js" => (
            super::members::KUBECONFIG_FILE_JS,
            "text/javascript; charset=utf-8",
        ),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// Sign-in, sign-out and the assets.
pub(super) fn routes() -> Router<Shared> {
    Router::new()
        .route("/ui", get(root))
        .route("/ui/", get(root))
        .route("/ui/signin", get(signin_form).post(signin))
        .route("/ui/signout", post(signout))
        .route("/ui/assets/{file}", get(asset))
}
