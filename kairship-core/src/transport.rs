//! What the transports (REST, gRPC, the console, the native proxy) share on the wire:
//! bearer tokens, whether the server speaks TLS, the request's base URL and the body limit.
//! The transports import this, never each other.

use http::HeaderMap;

/// Largest accepted request body (REST; gRPC messages too).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

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

/// The base URL of this request (`scheme://host`), from `X-Forwarded-*` proxy headers, the
/// `Host` header, or (HTTP/2) the request's authority.
pub fn request_base_url(headers: &HeaderMap, uri: &http::Uri, tls: bool) -> Option<String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or(v).trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let host = header("x-forwarded-host")
        .or_else(|| header("host"))
        .or_else(|| uri.authority().map(|a| a.as_str().to_owned()))?;
    let scheme = header("x-forwarded-proto")
        .unwrap_or_else(|| if tls { "https" } else { "http" }.to_owned());
    Some(format!("{scheme}://{host}"))
}

/// Whether the server speaks TLS (set by the server as a request extension).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServedOverTls(pub bool);

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

    #[test]
    fn base_url_from_headers() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            h
        };
        for (pairs, tls, want) in [
            (
                vec![("host", "k.example.com:8443")],
                true,
                Some("https://k.example.com:8443"),
            ),
            (
                vec![("host", "127.0.0.1:1")],
                false,
                Some("http://127.0.0.1:1"),
            ),
            (
                vec![
                    ("host", "internal:80"),
                    ("x-forwarded-host", "api.example.com"),
                    ("x-forwarded-proto", "https"),
                ],
                false,
                Some("https://api.example.com"),
            ),
            (vec![], false, None),
        ] {
            let none = http::Uri::from_static("/x");
            assert_eq!(
                request_base_url(&headers(&pairs), &none, tls).as_deref(),
                want,
                "{pairs:?}"
            );
        }
        let h2 = http::Uri::from_static("https://api.example.com:8443/x");
        assert_eq!(
            request_base_url(&HeaderMap::new(), &h2, true).as_deref(),
            Some("https://api.example.com:8443")
        );
    }
}
