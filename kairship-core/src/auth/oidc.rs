//! OpenID Connect ID tokens: verification (signature from the issuer's JWKS, `iss`, `aud`,
//! `exp`, `nonce`) and the mapping of their claims to a [`Caller`] the way kube-apiserver's
//! `--oidc-*` flags do, plus the PKCE pair of an authorization-code sign-in.
//!
//! Signatures: ES256 (ECDSA P-256, SHA-256) and RS256 (RSA PKCS#1 v1.5, SHA-256) through
//! ring; `none` and every other algorithm are refused.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::Value;

use crate::access::Caller;

/// How an issuer's ID tokens are checked and mapped (kube-apiserver's `--oidc-*` flags).
#[derive(Clone, Debug)]
pub struct OidcClaims {
    /// `--oidc-issuer-url`: the `iss` every token must carry.
    pub issuer: String,
    /// `--oidc-client-id`: an `aud` every token must carry.
    pub client_id: String,
    /// `--oidc-username-claim` (default `sub`).
    pub username_claim: String,
    /// `--oidc-username-prefix`: `None` for the default, `Some("-")` for none.
    pub username_prefix: Option<String>,
    /// `--oidc-groups-claim`: no groups when unset.
    pub groups_claim: Option<String>,
    /// `--oidc-groups-prefix`.
    pub groups_prefix: Option<String>,
}

impl OidcClaims {
    /// The prefix user names get. Upstream: kubernetes `pkg/kubeapiserver/options/
    /// authentication.go` (`ToAuthenticationConfig`): unset and a claim other than `email`
    /// means `<issuer>#`; `-` means none.
    pub fn effective_username_prefix(&self) -> String {
        match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(prefix) => prefix.to_owned(),
            None if self.username_claim == "email" => String::new(),
            None => format!("{}#", self.issuer),
        }
    }
}

/// Why an ID token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// Not a compact JWS, or its parts do not decode.
    #[error("malformed ID token: {0}")]
    Malformed(&'static str),
    /// An algorithm other than ES256 and RS256.
    #[error("ID token algorithm {0:?} is not accepted (ES256, RS256)")]
    Algorithm(String),
    /// No key of the issuer's JWKS verifies the signature.
    #[error("ID token signature does not verify with the issuer's keys")]
    Signature,
    /// A claim check failed, or the issuer refused.
    #[error("ID token refused: {0}")]
    Claim(String),
    /// The issuer could not be reached or answered nonsense.
    #[error("OIDC issuer unavailable: {0}")]
    Unavailable(String),
}

#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
}

/// One key of a JWKS document (RFC 7517), as far as ES256 and RS256 need.
#[derive(Clone, Debug, Deserialize)]
pub struct Jwk {
    /// `EC` or `RSA`.
    pub kty: String,
    /// Key id.
    pub kid: Option<String>,
    /// EC curve (`P-256`).
    pub crv: Option<String>,
    /// EC point coordinates (base64url).
    pub x: Option<String>,
    /// EC point coordinates (base64url).
    pub y: Option<String>,
    /// RSA modulus (base64url).
    pub n: Option<String>,
    /// RSA exponent (base64url).
    pub e: Option<String>,
}

/// An issuer's `jwks_uri` document.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Jwks {
    /// The keys.
    pub keys: Vec<Jwk>,
}

fn b64(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

impl Jwk {
    /// Whether this key verifies `sig` over `message` with `alg`.
    fn verifies(&self, alg: &str, message: &[u8], sig: &[u8]) -> bool {
        match (alg, self.kty.as_str()) {
            ("ES256", "EC") if self.crv.as_deref() == Some("P-256") => {
                let (Some(x), Some(y)) = (
                    self.x.as_deref().and_then(b64),
                    self.y.as_deref().and_then(b64),
                ) else {
                    return false;
                };
                if x.len() != 32 || y.len() != 32 {
                    return false;
                }
                let mut point = vec![4u8];
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, sig)
                    .is_ok()
            }
            ("RS256", "RSA") => {
                let (Some(n), Some(e)) = (
                    self.n.as_deref().and_then(b64),
                    self.e.as_deref().and_then(b64),
                ) else {
                    return false;
                };
                RsaPublicKeyComponents { n, e }
                    .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, sig)
                    .is_ok()
            }
            _ => false,
        }
    }
}

/// The claims of `token` once its signature verifies with a key of `jwks` and `iss`, `aud`,
/// `exp` (at `now`, Unix seconds) and, for a sign-in, `nonce` match (a bearer token has no
/// sign-in to match, as with kube-apiserver).
pub fn verify_id_token(
    token: &str,
    jwks: &Jwks,
    claims: &OidcClaims,
    nonce: Option<&str>,
    now: u64,
) -> Result<BTreeMap<String, Value>, OidcError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(OidcError::Malformed("not three dot-separated parts"));
    };
    let header: Header = b64(h)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(OidcError::Malformed("header"))?;
    if header.alg != "ES256" && header.alg != "RS256" {
        return Err(OidcError::Algorithm(header.alg));
    }
    let sig = b64(s).ok_or(OidcError::Malformed("signature"))?;
    let message = format!("{h}.{p}");
    let verified = jwks
        .keys
        .iter()
        .filter(|k| header.kid.is_none() || k.kid == header.kid)
        .any(|k| k.verifies(&header.alg, message.as_bytes(), &sig));
    if !verified {
        return Err(OidcError::Signature);
    }
    let body: BTreeMap<String, Value> = b64(p)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or(OidcError::Malformed("payload"))?;
    let claim = |m: &str| OidcError::Claim(m.to_owned());
    if body.get("iss").and_then(Value::as_str) != Some(claims.issuer.as_str()) {
        return Err(claim("iss is not the configured issuer"));
    }
    let audience_ok = match body.get("aud") {
        Some(Value::String(a)) => *a == claims.client_id,
        Some(Value::Array(list)) => list
            .iter()
            .any(|a| a.as_str() == Some(claims.client_id.as_str())),
        _ => false,
    };
    if !audience_ok {
        return Err(claim("aud does not name the client id"));
    }
    match body.get("exp").and_then(Value::as_u64) {
        Some(exp) if exp > now => {}
        Some(_) => return Err(claim("expired")),
        None => return Err(claim("no exp")),
    }
    if let Some(nonce) = nonce {
        let sent = body
            .get("nonce")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !crate::console::session::secrets_equal(sent, nonce) || nonce.is_empty() {
            return Err(claim("nonce does not match the sign-in"));
        }
    }
    Ok(body)
}

/// The caller verified claims name. Upstream: kubernetes `staging/src/k8s.io/apiserver/plugin/
/// pkg/authenticator/token/oidc/oidc.go` (`AuthenticateToken`): the username claim must be a
/// string; for `email`, an `email_verified` claim present must be true; the groups claim is a
/// string or a list of strings.
pub fn caller_from_claims(
    body: &BTreeMap<String, Value>,
    claims: &OidcClaims,
) -> Result<Caller, OidcError> {
    let name = body
        .get(&claims.username_claim)
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            OidcError::Claim(format!(
                "claim {:?} is missing or not a string",
                claims.username_claim
            ))
        })?;
    if claims.username_claim == "email"
        && let Some(verified) = body.get("email_verified")
        && verified.as_bool() != Some(true)
    {
        return Err(OidcError::Claim("email is not verified".into()));
    }
    let groups = match claims.groups_claim.as_ref().and_then(|c| body.get(c)) {
        None => vec![],
        Some(Value::String(g)) => vec![g.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .map(|g| g.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| OidcError::Claim("groups claim holds a non-string".into()))?,
        Some(_) => {
            return Err(OidcError::Claim(
                "groups claim is not a string or a list".into(),
            ));
        }
    };
    let group_prefix = claims.groups_prefix.clone().unwrap_or_default();
    Ok(Caller::new(
        format!("{}{name}", claims.effective_username_prefix()),
        groups
            .into_iter()
            .map(|g| format!("{group_prefix}{g}"))
            .collect(),
    ))
}

/// A PKCE verifier and its S256 challenge (RFC 7636).
#[derive(Clone)]
pub struct Pkce {
    /// Kept by the client until the code is exchanged.
    pub verifier: String,
    /// Sent in the authorization request with `code_challenge_method=S256`.
    pub challenge: String,
}

impl std::fmt::Debug for Pkce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pkce")
            .field("challenge", &self.challenge)
            .finish_non_exhaustive()
    }
}

impl Pkce {
    /// A fresh random pair.
    pub fn generate(rng: &SystemRandom) -> Option<Pkce> {
        let mut bytes = [0u8; 32];
        rng.fill(&mut bytes).ok()?;
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        Some(Pkce {
            challenge: pkce_challenge(&verifier),
            verifier,
        })
    }
}

/// The S256 challenge of `verifier`: base64url(SHA-256(verifier)).
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        verifier.as_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://issuer.example";

    fn es256_key() -> (EcdsaKeyPair, Jwk) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let point = pair.public_key().as_ref();
        let jwk = Jwk {
            kty: "EC".into(),
            kid: Some("k1".into()),
            crv: Some("P-256".into()),
            x: Some(URL_SAFE_NO_PAD.encode(&point[1..33])),
            y: Some(URL_SAFE_NO_PAD.encode(&point[33..65])),
            n: None,
            e: None,
        };
        (pair, jwk)
    }

    fn sign(pair: &EcdsaKeyPair, header: Value, body: Value) -> String {
        let h = URL_SAFE_NO_PAD.encode(header.to_string());
        let p = URL_SAFE_NO_PAD.encode(body.to_string());
        let sig = pair
            .sign(&SystemRandom::new(), format!("{h}.{p}").as_bytes())
            .unwrap();
        format!("{h}.{p}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }

    fn claims() -> OidcClaims {
        OidcClaims {
            issuer: ISSUER.into(),
            client_id: "kairship".into(),
            username_claim: "email".into(),
            username_prefix: None,
            groups_claim: Some("groups".into()),
            groups_prefix: Some("oidc:".into()),
        }
    }

    fn good_body() -> Value {
        json!({"iss": ISSUER, "aud": ["other", "kairship"], "exp": 2000, "nonce": "n1",
               "sub": "123", "email": "alice@example.com", "email_verified": true,
               "groups": ["devs", "ops"]})
    }

    #[test]
    fn id_tokens_verify_and_map_like_kube_apiserver() {
        let (pair, jwk) = es256_key();
        let (other, _) = es256_key();
        let jwks = Jwks { keys: vec![jwk] };
        let header = json!({"alg": "ES256", "kid": "k1"});
        let good = sign(&pair, header.clone(), good_body());
        let body = verify_id_token(&good, &jwks, &claims(), Some("n1"), 1000).unwrap();
        let caller = caller_from_claims(&body, &claims()).unwrap();
        assert_eq!(caller.user, "alice@example.com");
        assert_eq!(caller.groups, ["oidc:devs", "oidc:ops"]);

        let with = |k: &str, v: Value| {
            let mut b = good_body();
            b[k] = v;
            sign(&pair, header.clone(), b)
        };
        let mut tampered = good.clone().into_bytes();
        let i = good.find('.').unwrap() + 3;
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        for (name, token, nonce, want) in [
            ("iss", with("iss", json!("https://evil")), "n1", "iss"),
            ("aud", with("aud", json!("other")), "n1", "aud"),
            ("exp", with("exp", json!(1000)), "n1", "expired"),
            ("no exp", with("exp", Value::Null), "n1", "no exp"),
            ("nonce", good.clone(), "n2", "nonce"),
            ("empty nonce", with("nonce", json!("")), "", "nonce"),
            (
                "other key",
                sign(&other, header.clone(), good_body()),
                "n1",
                "signature",
            ),
            (
                "unknown kid",
                sign(&pair, json!({"alg": "ES256", "kid": "k2"}), good_body()),
                "n1",
                "signature",
            ),
            (
                "alg none",
                format!(
                    "{}.{}.",
                    URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
                    URL_SAFE_NO_PAD.encode(good_body().to_string())
                ),
                "n1",
                "algorithm",
            ),
            (
                "RS256 header on an EC key",
                sign(&pair, json!({"alg": "RS256", "kid": "k1"}), good_body()),
                "n1",
                "signature",
            ),
            ("tampered", String::from_utf8(tampered).unwrap(), "n1", ""),
            ("two parts", "a.b".into(), "n1", "malformed"),
        ] {
            let err = verify_id_token(&token, &jwks, &claims(), Some(nonce), 1000).unwrap_err();
            assert!(
                err.to_string().to_lowercase().contains(want),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn claim_mapping_table() {
        let base = claims();
        let sub = OidcClaims {
            username_claim: "sub".into(),
            ..base.clone()
        };
        let sub_none = OidcClaims {
            username_prefix: Some("-".into()),
            ..sub.clone()
        };
        let sub_custom = OidcClaims {
            username_prefix: Some("oidc:".into()),
            groups_claim: None,
            ..sub.clone()
        };
        for (name, config, body, want) in [
            (
                "sub gets issuer#",
                &sub,
                good_body(),
                Ok("https://issuer.example#123"),
            ),
            ("dash means none", &sub_none, good_body(), Ok("123")),
            ("custom prefix", &sub_custom, good_body(), Ok("oidc:123")),
            (
                "unverified email",
                &base,
                json!({"email": "a@b", "email_verified": false}),
                Err(()),
            ),
            (
                "email without email_verified",
                &base,
                json!({"email": "a@b"}),
                Ok("a@b"),
            ),
            ("missing claim", &base, json!({"sub": "1"}), Err(())),
            (
                "groups not strings",
                &base,
                json!({"email": "a@b", "groups": [1]}),
                Err(()),
            ),
        ] {
            let body: BTreeMap<String, Value> = serde_json::from_value(body).unwrap();
            let got = caller_from_claims(&body, config);
            match want {
                Ok(user) => assert_eq!(got.unwrap().user, user, "{name}"),
                Err(()) => assert!(got.is_err(), "{name}"),
            }
        }
        let single: BTreeMap<String, Value> =
            serde_json::from_value(json!({"email": "a@b", "sub": "1", "groups": "devs"})).unwrap();
        assert_eq!(
            caller_from_claims(&single, &base).unwrap().groups,
            ["oidc:devs"]
        );
        assert!(
            caller_from_claims(&single, &sub_custom)
                .unwrap()
                .groups
                .is_empty()
        );
    }

    #[test]
    fn pkce_s256_is_unpadded_base64url_of_sha256() {
        // SHA-256("abc") = ba7816bf...f20015ad (FIPS 180-2), base64url without padding.
        assert_eq!(
            pkce_challenge("abc"),
            "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
        );
        let pair = Pkce::generate(&SystemRandom::new()).unwrap();
        assert_eq!(pair.challenge, pkce_challenge(&pair.verifier));
        assert_eq!(pair.verifier.len(), 43);
    }
}
