//! The authentication middleware: `Authorization: Bearer <token>` -> [`Authenticator`] ->
//! [`Authenticated`] on the request; 401 `{code, message}` otherwise.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;

use super::extract::Authenticated;
use crate::access::Authenticator;
use crate::api::error::{ApiError, Code};
use crate::api::service::BearerToken;

/// The bearer token of `Authorization: Bearer <token>` (scheme case-insensitive), if any.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    parse_bearer(headers.get(http::header::AUTHORIZATION)?.to_str().ok()?)
}

/// The token of an `Authorization` value `Bearer <token>` (also the gRPC `authorization`
/// metadata).
pub fn parse_bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn unauthenticated(err: ApiError) -> Response {
    let mut response = err.into_response();
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Bearer"),
    );
    response
}

/// Authenticates the request's bearer token; the handlers find the caller in the request.
pub async fn authenticate(
    State(authenticator): State<Arc<dyn Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer_token(req.headers()).map(str::to_owned) else {
        return unauthenticated(ApiError::new(
            Code::Unauthenticated,
            "no bearer token: send the header `Authorization: Bearer <token>`",
        ));
    };
    match authenticator.authenticate(&token).await {
        Ok(caller) => {
            req.extensions_mut().insert(Authenticated {
                caller,
                token: BearerToken::new(token),
            });
            next.run(req).await
        }
        Err(err) => {
            let err = ApiError::from(err);
            if err.code == Code::Unauthenticated {
                unauthenticated(err)
            } else {
                err.into_response()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_table() {
        for (header, want) in [
            (Some("Bearer abc"), Some("abc")),
            (Some("bearer  abc "), Some("abc")),
            (Some("BEARER x.y-z"), Some("x.y-z")),
            (Some("Basic abc"), None),
            (Some("Bearer "), None),
            (Some("Bearer"), None),
            (None, None),
        ] {
            let mut headers = HeaderMap::new();
            if let Some(h) = header {
                headers.insert(http::header::AUTHORIZATION, h.parse().unwrap());
            }
            assert_eq!(bearer_token(&headers), want, "{header:?}");
        }
    }
}
