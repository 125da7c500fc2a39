//! The authentication middleware: `Authorization: Bearer <token>` -> [`Authenticator`] ->
//! [`Authenticated`] on the request; 401 `{code, message}` otherwise.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::extract::Authenticated;
use crate::access::Authenticator;
use crate::api::BearerToken;
use crate::api::{ApiError, Code};
use crate::limit::{CallerLimiter, rest_too_many_requests};
use crate::transport::bearer_token;

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
            // Writes count against the caller's limit, when the server has one.
            if !req.method().is_safe()
                && let Some(limiter) = req.extensions().get::<Arc<CallerLimiter>>()
                && let Err(retry) = limiter.admit(&caller.user)
            {
                return rest_too_many_requests(retry);
            }
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
