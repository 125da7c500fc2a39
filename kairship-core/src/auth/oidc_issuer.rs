//! One OpenID Connect issuer as Kairship uses it: its discovery document and keys fetched
//! and kept, the authorization-code exchange of a console sign-in, and an [`Authenticator`]
//! that accepts the issuer's ID tokens as bearer tokens, mapped as kube-apiserver's
//! `--oidc-*` flags map them, so a console session and an API call with the same ID token are
//! the same caller.
//!
//! The issuer must be `https`, as kube-apiserver requires; plain `http` is accepted only on a
//! loopback address (a local development issuer).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::Value;

use super::oidc::{Jwks, OidcClaims, OidcError, caller_from_claims, verify_id_token};
use crate::access::{AccessError, Authenticator, Caller};

/// The group kube-apiserver adds to every authenticated user (kubernetes
/// `staging/src/k8s.io/apiserver/pkg/authentication/group/authenticated_group_adder.go`).
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// How soon after a refresh an unknown key id may fetch the keys again.
const KEY_REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// How Kairship talks to an issuer.
#[derive(Clone, Debug)]
pub struct OidcIssuerConfig {
    /// Issuer, client id and claim mapping.
    pub claims: OidcClaims,
    /// The client secret of the console's authorization-code sign-in, when the issuer asks
    /// for one (public clients with PKCE need none).
    pub client_secret: Option<String>,
    /// Scopes asked for besides `openid`.
    pub extra_scopes: Vec<String>,
    /// PEM CA bundle the issuer's certificate chains to; default: the system roots.
    pub ca_pem: Option<String>,
}

/// The endpoints of the issuer's discovery document.
#[derive(Clone, Debug, Deserialize)]
pub struct IssuerEndpoints {
    /// The `issuer` the document names (must be the configured one).
    pub issuer: String,
    /// Where browsers are sent to sign in.
    pub authorization_endpoint: String,
    /// Where codes are exchanged.
    pub token_endpoint: String,
    /// The issuer's keys.
    pub jwks_uri: String,
}

struct Known {
    endpoints: IssuerEndpoints,
    jwks: Jwks,
    fetched: Instant,
}

/// The console's sign-in through an issuer: the issuer and the callback registered there.
#[derive(Clone, Debug)]
pub struct OidcSignIn {
    /// The issuer, also one of the API's authenticators.
    pub issuer: std::sync::Arc<OidcIssuer>,
    /// The callback URL registered at the issuer; default: the server's own
    /// `<scheme>://<Host>/ui/oidc/callback` as the browser reached it.
    pub redirect_url: Option<String>,
}

/// An issuer whose documents are fetched on first use and kept.
pub struct OidcIssuer {
    config: OidcIssuerConfig,
    http: reqwest::Client,
    known: Mutex<Option<Known>>,
}

impl std::fmt::Debug for OidcIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcIssuer")
            .field("issuer", &self.config.claims.issuer)
            .field("client_id", &self.config.claims.client_id)
            .finish_non_exhaustive()
    }
}

/// Whether `url` may be an issuer: `https`, or `http` on a loopback host.
pub fn issuer_url_allowed(url: &str) -> bool {
    let Ok(parsed) = url.parse::<http::Uri>() else {
        return false;
    };
    match parsed.scheme_str() {
        Some("https") => parsed.host().is_some(),
        Some("http") => matches!(parsed.host(), Some("127.0.0.1" | "localhost" | "[::1]")),
        _ => false,
    }
}

impl OidcIssuer {
    /// An issuer client for `config`.
    pub fn new(config: OidcIssuerConfig) -> Result<OidcIssuer, OidcError> {
        if !issuer_url_allowed(&config.claims.issuer) {
            return Err(OidcError::Claim(format!(
                "issuer URL {:?} must be https (http only on a loopback address)",
                config.claims.issuer
            )));
        }
        kube_kit::client::install_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none());
        if let Some(ca) = &config.ca_pem {
            let certificates = reqwest::Certificate::from_pem_bundle(ca.as_bytes())
                .map_err(|e| OidcError::Claim(format!("the OIDC CA bundle is not PEM: {e}")))?;
            builder = builder.tls_certs_only(certificates);
        }
        let http = builder
            .build()
            .map_err(|e| OidcError::Claim(format!("building the OIDC client: {e}")))?;
        Ok(OidcIssuer {
            config,
            http,
            known: Mutex::new(None),
        })
    }

    /// The issuer URL.
    pub fn issuer(&self) -> &str {
        &self.config.claims.issuer
    }

    /// The claim mapping.
    pub fn claims(&self) -> &OidcClaims {
        &self.config.claims
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, OidcError> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(format!("GET {url}: {e}")))?;
        if !response.status().is_success() {
            return Err(OidcError::Unavailable(format!(
                "GET {url}: {}",
                response.status()
            )));
        }
        response
            .json()
            .await
            .map_err(|e| OidcError::Unavailable(format!("GET {url}: {e}")))
    }

    /// Fetches the discovery document and the keys (again).
    async fn refresh(&self) -> Result<(IssuerEndpoints, Jwks), OidcError> {
        let issuer = self.config.claims.issuer.trim_end_matches('/');
        let endpoints: IssuerEndpoints = self
            .get_json(&format!("{issuer}/.well-known/openid-configuration"))
            .await?;
        if endpoints.issuer != self.config.claims.issuer {
            return Err(OidcError::Claim(format!(
                "the discovery document names issuer {:?}",
                endpoints.issuer
            )));
        }
        let jwks: Jwks = self.get_json(&endpoints.jwks_uri).await?;
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = Some(Known {
            endpoints: endpoints.clone(),
            jwks: jwks.clone(),
            fetched: Instant::now(),
        });
        Ok((endpoints, jwks))
    }

    /// The endpoints and keys, fetched when not known yet, or again when `kid` is not among
    /// the keys and the last fetch is old enough (the issuer rotated).
    async fn documents(&self, kid: Option<&str>) -> Result<(IssuerEndpoints, Jwks), OidcError> {
        let kept = {
            let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
            known.as_ref().map(|k| {
                let has_kid = kid.is_none_or(|kid| {
                    k.jwks
                        .keys
                        .iter()
                        .any(|key| key.kid.as_deref() == Some(kid))
                });
                let stale = k.fetched.elapsed() >= KEY_REFRESH_INTERVAL;
                (k.endpoints.clone(), k.jwks.clone(), has_kid || !stale)
            })
        };
        match kept {
            Some((endpoints, jwks, true)) => Ok((endpoints, jwks)),
            _ => self.refresh().await,
        }
    }

    /// Where to send a browser to sign in.
    pub async fn authorization_url(
        &self,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        code_challenge: &str,
    ) -> Result<String, OidcError> {
        let (endpoints, _) = self.documents(None).await?;
        let mut scope = vec!["openid".to_owned()];
        scope.extend(self.config.extra_scopes.iter().cloned());
        let query = encode_pairs(&[
            ("response_type", "code"),
            ("client_id", self.config.claims.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("scope", scope.join(" ").as_str()),
            ("state", state),
            ("nonce", nonce),
            ("code_challenge", code_challenge),
            ("code_challenge_method", "S256"),
        ]);
        let separator = if endpoints.authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        Ok(format!(
            "{}{separator}{query}",
            endpoints.authorization_endpoint
        ))
    }

    /// Exchanges an authorization code for the ID token (RFC 6749 section 4.1.3, with the
    /// PKCE verifier of RFC 7636).
    pub async fn exchange_code(
        &self,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<String, OidcError> {
        let (endpoints, _) = self.documents(None).await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", self.config.claims.client_id.as_str()),
            ("code_verifier", verifier),
        ];
        if let Some(secret) = &self.config.client_secret {
            form.push(("client_secret", secret.as_str()));
        }
        let body = encode_pairs(&form);
        let response = self
            .http
            .post(&endpoints.token_endpoint)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| OidcError::Unavailable(format!("token endpoint: {e}")))?;
        let status = response.status();
        let answer: Value = response
            .json()
            .await
            .map_err(|e| OidcError::Unavailable(format!("token endpoint: {e}")))?;
        if !status.is_success() {
            // RFC 6749 section 5.2: `error` and an optional description; never the code.
            let error = answer
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            return Err(OidcError::Claim(format!(
                "the issuer refused the code: {error}"
            )));
        }
        answer
            .get("id_token")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(OidcError::Malformed("the token answer has no id_token"))
    }

    /// The caller an ID token names and when the token expires (Unix seconds), checking the
    /// sign-in's `nonce` when given.
    pub async fn verify(
        &self,
        token: &str,
        nonce: Option<&str>,
        now: u64,
    ) -> Result<(Caller, u64), OidcError> {
        let kid = header_kid(token);
        let (_, jwks) = self.documents(kid.as_deref()).await?;
        let body = verify_id_token(token, &jwks, &self.config.claims, nonce, now)?;
        let mut caller = caller_from_claims(&body, &self.config.claims)?;
        if !caller.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            caller.groups.push(AUTHENTICATED_GROUP.to_owned());
        }
        let exp = body.get("exp").and_then(Value::as_u64).unwrap_or(now);
        Ok((caller, exp))
    }
}

/// `application/x-www-form-urlencoded` pairs (also a URL query).
fn encode_pairs(pairs: &[(&str, &str)]) -> String {
    let owned: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    crate::router::encode_query(&owned)
}

/// The `kid` of a compact JWS header, if any.
fn header_kid(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).ok()?).ok()?;
    header.get("kid")?.as_str().map(str::to_owned)
}

/// The `iss` a compact JWS claims, read without verifying (to route the token to its
/// authenticator, as kube-apiserver's union of JWT authenticators does).
pub fn unverified_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let payload: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    payload.get("iss")?.as_str().map(str::to_owned)
}

#[async_trait]
impl Authenticator for OidcIssuer {
    async fn authenticate(&self, bearer_token: &str) -> Result<Caller, AccessError> {
        if unverified_issuer(bearer_token).as_deref() != Some(self.issuer()) {
            return Err(AccessError::Unauthenticated(
                "not an ID token of the configured issuer".into(),
            ));
        }
        let now = crate::console::session::unix_now();
        match self.verify(bearer_token, None, now).await {
            Ok((caller, _)) => Ok(caller),
            Err(OidcError::Unavailable(reason)) => Err(AccessError::Unavailable(reason)),
            Err(err) => Err(AccessError::Unauthenticated(err.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuer_urls_table() {
        for (url, allowed) in [
            ("https://issuer.example", true),
            ("https://issuer.example/realms/a", true),
            ("http://127.0.0.1:5556", true),
            ("http://localhost:5556/dex", true),
            ("http://issuer.example", false),
            ("ftp://issuer.example", false),
            ("issuer.example", false),
            ("", false),
        ] {
            assert_eq!(issuer_url_allowed(url), allowed, "{url}");
        }
    }

    #[test]
    fn unverified_issuer_reads_the_payload_only_of_a_three_part_token() {
        let payload = URL_SAFE_NO_PAD.encode(r#"{"iss":"https://i.example"}"#);
        assert_eq!(
            unverified_issuer(&format!("e30.{payload}.sig")).as_deref(),
            Some("https://i.example")
        );
        assert_eq!(unverified_issuer(&format!("e30.{payload}")), None);
        assert_eq!(unverified_issuer("sandbox-admin-123"), None);
        assert_eq!(unverified_issuer(&format!("e30.{payload}.s.x")), None);
    }
}
