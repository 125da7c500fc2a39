//! What every console handler shares: the console's state, the signed-in session and its
//! CSRF check, answers (HTML, redirects, refusals) and which write controls a caller sees.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::response::{Html as HtmlBody, IntoResponse, Response};
use http::request::Parts;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::page::{Viewer, error_page};
use super::session::{Session, Sessions};
use crate::access::{Authenticator, Authorizer, Caller, InstanceResource, Verb};
use crate::api::{ApiError, KairshipApi};

pub(in crate::console) struct Console {
    pub(in crate::console) api: Arc<dyn KairshipApi>,
    pub(in crate::console) authenticator: Arc<dyn Authenticator>,
    pub(in crate::console) authorizer: Arc<dyn Authorizer>,
    pub(in crate::console) sessions: Sessions,
    pub(in crate::console) oidc: Option<crate::auth::OidcSignIn>,
}

pub(in crate::console) type Shared = Arc<Console>;

/// A signed-in request: the session and who its token identifies now.
pub(in crate::console) struct SignedIn {
    pub(in crate::console) session: Session,
    pub(in crate::console) caller: Caller,
}

impl SignedIn {
    pub(in crate::console) fn viewer(&self) -> Viewer<'_> {
        Viewer {
            user: &self.caller.user,
            csrf: &self.session.csrf,
        }
    }
}

/// A handler taking [`SignedIn`] runs for a signed-in caller only: any other request is
/// answered as [`signed_in`] answers it (to the sign-in page, or 503).
impl FromRequestParts<Shared> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, console: &Shared) -> Result<Self, Response> {
        signed_in(console, &parts.headers).await
    }
}

/// A form POSTed by a signed-in caller with the session's CSRF token: what [`signed_post`]
/// accepts, as an extractor (the last argument of a handler, as it reads the body).
pub(in crate::console) struct SignedForm {
    pub(in crate::console) signed: SignedIn,
    pub(in crate::console) fields: HashMap<String, String>,
}

impl FromRequest<Shared> for SignedForm {
    type Rejection = Response;

    async fn from_request(req: Request, console: &Shared) -> Result<Self, Response> {
        let headers = req.headers().clone();
        let body = Bytes::from_request(req, console)
            .await
            .map_err(IntoResponse::into_response)?;
        let (signed, fields) = signed_post(console, &headers, &body).await?;
        Ok(SignedForm { signed, fields })
    }
}

/// The error page of a failed call about `title`, with the API error's status.
pub(in crate::console) fn error_answer(signed: &SignedIn, title: &str, err: &ApiError) -> Response {
    html(
        status_of(err),
        error_page(Some(&signed.viewer()), title, err),
    )
}

pub(in crate::console) fn is_htmx(headers: &HeaderMap) -> bool {
    headers.contains_key("hx-request")
}

pub(in crate::console) fn see_other(headers: &HeaderMap, to: &str) -> Response {
    if is_htmx(headers) {
        // htmx follows this header with a full page load.
        let mut r = StatusCode::OK.into_response();
        if let Ok(v) = HeaderValue::from_str(to) {
            r.headers_mut().insert("hx-redirect", v);
        }
        return r;
    }
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

pub(in crate::console) fn html(status: StatusCode, body: String) -> Response {
    (status, HtmlBody(body)).into_response()
}

pub(in crate::console) fn status_of(err: &ApiError) -> StatusCode {
    StatusCode::from_u16(err.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

pub(in crate::console) fn unavailable(message: &str) -> Response {
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        crate::console::page::error_page(None, "Unavailable", &ApiError::unavailable(message)),
    )
}

/// The session of the request, with its token authenticated again (a revoked token ends the
/// session); else a redirect to the sign-in page.
pub(in crate::console) async fn signed_in(
    console: &Console,
    headers: &HeaderMap,
) -> Result<SignedIn, Response> {
    let Some(id) =
        crate::console::session::cookie_value(headers, crate::console::session::COOKIE_NAME)
    else {
        return Err(see_other(headers, "/ui/signin"));
    };
    let session = match console.sessions.get(id).await {
        Ok(Some(session)) => session,
        Ok(None) => return Err(see_other(headers, "/ui/signin")),
        Err(err) => return Err(unavailable(&err.to_string())),
    };
    match console
        .authenticator
        .authenticate(session.token.expose())
        .await
    {
        Ok(caller) => Ok(SignedIn { session, caller }),
        Err(crate::access::AccessError::Unavailable(m)) => Err(unavailable(&m)),
        // The token no longer authenticates: the session is over (its cookie is useless).
        Err(_) => Err(see_other(headers, "/ui/signin")),
    }
}

/// Whether a POST comes from a page of this origin, as far as the browser tells: a cross-site
/// `Sec-Fetch-Site`, or an `Origin` naming another host, is refused even before the CSRF
/// token is looked at (this also guards the sign-in form, which has no session yet).
pub(in crate::console) fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()) {
        return matches!(site, "same-origin" | "none");
    }
    match (
        headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()),
        headers.get(header::HOST).and_then(|v| v.to_str().ok()),
    ) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

pub(in crate::console) fn forbidden(message: &str) -> Response {
    html(
        StatusCode::FORBIDDEN,
        crate::console::page::error_page(None, "Forbidden", &ApiError::forbidden(message)),
    )
}

/// The CSRF check of every POST made in a session: the session's token in the
/// `X-CSRF-Token` header (htmx) or the `_csrf` field (plain forms); the refusal's reason
/// otherwise (answered 403).
pub(in crate::console) fn check_csrf(
    signed: &SignedIn,
    headers: &HeaderMap,
    fields: &HashMap<String, String>,
) -> Result<(), &'static str> {
    if !same_origin(headers) {
        return Err("cross-site request refused");
    }
    let sent = headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .or_else(|| fields.get("_csrf").map(String::as_str));
    match sent {
        Some(token) if crate::console::session::secrets_equal(token, &signed.session.csrf) => {
            Ok(())
        }
        Some(_) => Err("wrong CSRF token: reload the page and try again"),
        None => Err("missing CSRF token"),
    }
}

/// A form POST made in a session: the session (else a redirect to sign in) and the form's
/// fields, once the CSRF check passed (else 403).
pub(in crate::console) async fn signed_post(
    console: &Console,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(SignedIn, HashMap<String, String>), Response> {
    let signed = signed_in(console, headers).await?;
    let fields = crate::console::form::parse(body);
    check_csrf(&signed, headers, &fields).map_err(forbidden)?;
    Ok((signed, fields))
}

pub(in crate::console) async fn allowed(
    console: &Console,
    caller: &Caller,
    verb: Verb,
    resource: InstanceResource,
    instance: &str,
) -> bool {
    console
        .authorizer
        .allowed(caller, verb, resource, Some(instance))
        .await
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_origin_table() {
        for (site, origin, host, want) in [
            (None, None, Some("127.0.0.1:8443"), true),
            (Some("same-origin"), None, None, true),
            (Some("none"), None, None, true),
            (Some("cross-site"), None, None, false),
            (Some("same-site"), None, None, false),
            (
                None,
                Some("http://127.0.0.1:8443"),
                Some("127.0.0.1:8443"),
                true,
            ),
            (
                None,
                Some("https://evil.example"),
                Some("127.0.0.1:8443"),
                false,
            ),
            (None, Some("null"), Some("127.0.0.1:8443"), false),
        ] {
            let mut h = HeaderMap::new();
            if let Some(s) = site {
                h.insert("sec-fetch-site", s.parse().unwrap());
            }
            if let Some(o) = origin {
                h.insert(header::ORIGIN, o.parse().unwrap());
            }
            if let Some(o) = host {
                h.insert(header::HOST, o.parse().unwrap());
            }
            assert_eq!(same_origin(&h), want, "{site:?} {origin:?} {host:?}");
        }
    }
}
