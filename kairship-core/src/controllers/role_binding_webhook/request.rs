//! The role-binding webhook's pure parts: request signature verification (HMAC-SHA256 over
//! `"{timestamp}.{body}"`, replay window, replay cache) and the request body.
//!
//! An external IAM signs each call with a shared secret and sends two headers: the Unix
//! timestamp in seconds ([`TIMESTAMP_HEADER`]) and the hex HMAC, optionally prefixed with
//! `sha256=` ([`SIGNATURE_HEADER`]).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use ring::hmac;
use serde::{Deserialize, Serialize};

use crate::controllers::instance_registry::rbac::{
    InstanceRole, SubjectKind, binding_name, cluster_role_binding,
};
use crate::naming::validate_instance_name;

/// Header carrying the Unix timestamp (seconds) the request was signed at.
pub const TIMESTAMP_HEADER: &str = "X-Kairship-Timestamp";
/// Header carrying the signature: hex, or `sha256=<hex>`.
pub const SIGNATURE_HEADER: &str = "X-Kairship-Signature";
/// Default accepted clock difference between signer and receiver, in either direction.
pub const DEFAULT_REPLAY_WINDOW: Duration = Duration::from_secs(300);
/// Longest accepted subject name, in bytes.
pub const MAX_SUBJECT_NAME_LEN: usize = 1024;

const SHA256_LEN: usize = 32;

/// Why a webhook call is not authentic. Every variant maps to HTTP 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookAuthError {
    /// The timestamp header is absent or empty.
    #[error("missing {TIMESTAMP_HEADER} header")]
    MissingTimestamp,
    /// The timestamp header is not an integer number of seconds.
    #[error("{TIMESTAMP_HEADER} header is not a Unix timestamp in seconds")]
    MalformedTimestamp,
    /// The signature header is absent or empty.
    #[error("missing {SIGNATURE_HEADER} header")]
    MissingSignature,
    /// The signature header is not 64 hex digits (optionally after `sha256=`).
    #[error("{SIGNATURE_HEADER} header is not a hex SHA-256 HMAC")]
    MalformedSignature,
    /// The timestamp is too far from the receiver's clock.
    #[error(
        "request timestamp is {skew_seconds}s away from now, outside the {window_seconds}s window"
    )]
    OutsideWindow {
        /// Signed difference `timestamp - now`, in seconds.
        skew_seconds: i64,
        /// The accepted window, in seconds.
        window_seconds: u64,
    },
    /// The HMAC does not match.
    #[error("signature does not match")]
    BadSignature,
    /// This exact signed request was already accepted.
    #[error("request was already processed (replay)")]
    Replayed,
    /// Too many requests inside the window to remember them all; refused rather than
    /// risking an undetected replay.
    #[error("too many signed requests within the replay window")]
    ReplayCacheFull,
}

/// Verifies a webhook call: the timestamp lies within `window` of `now` (either direction)
/// and the signature is the HMAC-SHA256 of `"{timestamp}.{body}"` under `secret`, compared in
/// constant time.
///
/// This does not detect a replay of a valid request inside the window; use
/// [`ReplayCache::verify_and_record`] for that.
pub fn verify_signature(
    secret: &[u8],
    timestamp_header: &str,
    signature_header: &str,
    body: &[u8],
    now: jiff::Timestamp,
    window: Duration,
) -> Result<(), WebhookAuthError> {
    check_signed_request(
        secret,
        timestamp_header,
        signature_header,
        body,
        now,
        window,
    )
    .map(|_| ())
}

/// A request that passed [`verify_signature`]: its timestamp and decoded signature.
struct VerifiedRequest {
    timestamp: i64,
    signature: [u8; SHA256_LEN],
}

fn check_signed_request(
    secret: &[u8],
    timestamp_header: &str,
    signature_header: &str,
    body: &[u8],
    now: jiff::Timestamp,
    window: Duration,
) -> Result<VerifiedRequest, WebhookAuthError> {
    let timestamp_text = timestamp_header.trim();
    if timestamp_text.is_empty() {
        return Err(WebhookAuthError::MissingTimestamp);
    }
    if !timestamp_text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(WebhookAuthError::MalformedTimestamp);
    }
    let timestamp: i64 = timestamp_text
        .parse()
        .map_err(|_| WebhookAuthError::MalformedTimestamp)?;

    let signature_text = signature_header.trim();
    if signature_text.is_empty() {
        return Err(WebhookAuthError::MissingSignature);
    }
    let hex = signature_text
        .strip_prefix("sha256=")
        .unwrap_or(signature_text);
    let signature = decode_hex_32(hex).ok_or(WebhookAuthError::MalformedSignature)?;

    let skew_seconds = timestamp.saturating_sub(now.as_second());
    let window_seconds = window.as_secs();
    if skew_seconds.unsigned_abs() > window_seconds {
        return Err(WebhookAuthError::OutsideWindow {
            skew_seconds,
            window_seconds,
        });
    }

    // Sign exactly the timestamp text that was sent, so "0123" and "123" sign differently.
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut message = Vec::with_capacity(timestamp_text.len() + 1 + body.len());
    message.extend_from_slice(timestamp_text.as_bytes());
    message.push(b'.');
    message.extend_from_slice(body);
    hmac::verify(&key, &message, &signature).map_err(|_| WebhookAuthError::BadSignature)?;
    Ok(VerifiedRequest {
        timestamp,
        signature,
    })
}

/// Computes the signature header value (`sha256=<hex>`) for a body, as a caller must.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(timestamp.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body);
    format!("sha256={}", crate::naming::hex_encode(ctx.sign().as_ref()))
}

fn decode_hex_32(hex: &str) -> Option<[u8; SHA256_LEN]> {
    let bytes = hex.as_bytes();
    if bytes.len() != SHA256_LEN * 2 {
        return None;
    }
    let mut out = [0u8; SHA256_LEN];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let hi = hex_value(pair[0])?;
        let lo = hex_value(pair[1])?;
        *slot = (hi << 4) | lo;
    }
    Some(out)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Remembers the signatures of accepted requests until they leave the replay window, so a
/// captured request cannot be sent again while its timestamp is still acceptable.
#[derive(Debug)]
pub struct ReplayCache {
    capacity: usize,
    /// signature -> Unix second after which the entry may be forgotten.
    seen: HashMap<[u8; SHA256_LEN], i64>,
    /// (expiry, signature), to forget entries in expiry order.
    by_expiry: BTreeSet<(i64, [u8; SHA256_LEN])>,
}

impl ReplayCache {
    /// A cache remembering at most `capacity` requests at once.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            seen: HashMap::new(),
            by_expiry: BTreeSet::new(),
        }
    }

    /// Number of remembered requests.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// [`verify_signature`], then refuses a signature already accepted within the window and
    /// records this one.
    pub fn verify_and_record(
        &mut self,
        secret: &[u8],
        timestamp_header: &str,
        signature_header: &str,
        body: &[u8],
        now: jiff::Timestamp,
        window: Duration,
    ) -> Result<(), WebhookAuthError> {
        let request = check_signed_request(
            secret,
            timestamp_header,
            signature_header,
            body,
            now,
            window,
        )?;
        self.forget_expired(now.as_second());
        if self.seen.contains_key(&request.signature) {
            return Err(WebhookAuthError::Replayed);
        }
        if self.seen.len() >= self.capacity {
            return Err(WebhookAuthError::ReplayCacheFull);
        }
        // A request stays acceptable until `timestamp + window`; remember it at least that long.
        let window_seconds = i64::try_from(window.as_secs()).unwrap_or(i64::MAX);
        let expiry = request.timestamp.saturating_add(window_seconds);
        self.seen.insert(request.signature, expiry);
        self.by_expiry.insert((expiry, request.signature));
        Ok(())
    }

    fn forget_expired(&mut self, now: i64) {
        while let Some(&(expiry, signature)) = self.by_expiry.first() {
            if expiry >= now {
                break;
            }
            self.by_expiry.pop_first();
            self.seen.remove(&signature);
        }
    }
}

/// Whether a webhook call grants or revokes a role.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum BindingAction {
    /// Create the ClusterRoleBinding (no-op if present).
    Bind,
    /// Delete the ClusterRoleBinding (no-op if absent).
    Unbind,
}

/// The user or group a call is about.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BindingSubject {
    /// `User` or `Group`.
    pub kind: SubjectKind,
    /// Name as the host cluster's authenticator reports it.
    pub name: String,
}

/// Body of a role-binding webhook call.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RoleBindingRequest {
    /// `bind` or `unbind`.
    pub action: BindingAction,
    /// Instance name.
    pub instance: String,
    /// `admin`, `edit` or `view`.
    pub role: InstanceRole,
    /// Who gets or loses the role.
    pub subject: BindingSubject,
}

/// Why a role-binding request body is unacceptable (HTTP 400).
#[derive(Debug, thiserror::Error)]
pub enum RoleBindingRequestError {
    /// The body is not valid JSON of the expected shape.
    #[error("malformed role-binding request: {0}")]
    Malformed(#[from] serde_json::Error),
    /// The instance name is invalid.
    #[error("invalid instance in role-binding request: {0}")]
    Instance(#[from] crate::naming::InstanceNameError),
    /// The subject name is empty or blank.
    #[error("subject.name must not be empty")]
    EmptySubject,
    /// The subject name is too long.
    #[error("subject.name is {0} bytes long, at most {MAX_SUBJECT_NAME_LEN} are allowed")]
    SubjectTooLong(usize),
    /// The subject name has leading/trailing whitespace or control characters.
    #[error("subject.name {0:?} has control characters or leading/trailing whitespace")]
    SubjectInvalid(String),
}

impl RoleBindingRequest {
    /// Parses and validates a request body.
    pub fn from_json(body: &[u8]) -> Result<Self, RoleBindingRequestError> {
        let request: RoleBindingRequest = serde_json::from_slice(body)?;
        request.validate()?;
        Ok(request)
    }

    /// Checks the instance name and subject name.
    pub fn validate(&self) -> Result<(), RoleBindingRequestError> {
        validate_instance_name(&self.instance)?;
        let name = &self.subject.name;
        if name.trim().is_empty() {
            return Err(RoleBindingRequestError::EmptySubject);
        }
        if name.len() > MAX_SUBJECT_NAME_LEN {
            return Err(RoleBindingRequestError::SubjectTooLong(name.len()));
        }
        if name.trim() != name || name.chars().any(char::is_control) {
            return Err(RoleBindingRequestError::SubjectInvalid(name.clone()));
        }
        Ok(())
    }

    /// Name of the ClusterRoleBinding this request creates or deletes.
    pub fn binding_name(&self) -> String {
        binding_name(
            &self.instance,
            self.role,
            self.subject.kind,
            &self.subject.name,
        )
    }

    /// The ClusterRoleBinding a `bind` request must ensure.
    pub fn desired_binding(&self) -> ClusterRoleBinding {
        cluster_role_binding(
            &self.instance,
            self.role,
            self.subject.kind,
            &self.subject.name,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"s3cr3t";
    const BODY: &[u8] = br#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"User","name":"alice"}}"#;
    const NOW: i64 = 1_700_000_000;

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(NOW).unwrap()
    }

    fn bare_hex(signature: &str) -> String {
        signature.trim_start_matches("sha256=").to_owned()
    }

    #[test]
    fn signature_cases() {
        let good = sign(SECRET, NOW, BODY);
        let window = Duration::from_secs(300);
        let upper = bare_hex(&good).to_uppercase();
        let other_secret = sign(b"other", NOW, BODY);
        let early = sign(SECRET, NOW - 301, BODY);
        let late = sign(SECRET, NOW + 301, BODY);
        let edge = sign(SECRET, NOW - 300, BODY);
        let ts = NOW.to_string();
        type Case<'a> = (
            &'a str,
            String,
            String,
            &'a [u8],
            Result<(), WebhookAuthError>,
        );
        let cases: Vec<Case> = vec![
            ("prefixed hex", ts.clone(), good.clone(), BODY, Ok(())),
            ("bare hex", ts.clone(), bare_hex(&good), BODY, Ok(())),
            ("upper-case hex", ts.clone(), upper, BODY, Ok(())),
            (
                "edge of window",
                (NOW - 300).to_string(),
                edge,
                BODY,
                Ok(()),
            ),
            (
                "tampered body",
                ts.clone(),
                good.clone(),
                b"{}",
                Err(WebhookAuthError::BadSignature),
            ),
            (
                "wrong secret",
                ts.clone(),
                other_secret,
                BODY,
                Err(WebhookAuthError::BadSignature),
            ),
            (
                "timestamp not the signed one",
                (NOW + 1).to_string(),
                good.clone(),
                BODY,
                Err(WebhookAuthError::BadSignature),
            ),
            (
                "stale",
                (NOW - 301).to_string(),
                early,
                BODY,
                Err(WebhookAuthError::OutsideWindow {
                    skew_seconds: -301,
                    window_seconds: 300,
                }),
            ),
            (
                "from the future",
                (NOW + 301).to_string(),
                late,
                BODY,
                Err(WebhookAuthError::OutsideWindow {
                    skew_seconds: 301,
                    window_seconds: 300,
                }),
            ),
            (
                "no timestamp",
                String::new(),
                good.clone(),
                BODY,
                Err(WebhookAuthError::MissingTimestamp),
            ),
            (
                "negative timestamp",
                "-5".into(),
                good.clone(),
                BODY,
                Err(WebhookAuthError::MalformedTimestamp),
            ),
            (
                "float timestamp",
                "1.5".into(),
                good.clone(),
                BODY,
                Err(WebhookAuthError::MalformedTimestamp),
            ),
            (
                "no signature",
                ts.clone(),
                String::new(),
                BODY,
                Err(WebhookAuthError::MissingSignature),
            ),
            (
                "short signature",
                ts.clone(),
                "sha256=abcd".into(),
                BODY,
                Err(WebhookAuthError::MalformedSignature),
            ),
            (
                "non-hex signature",
                ts.clone(),
                "z".repeat(64),
                BODY,
                Err(WebhookAuthError::MalformedSignature),
            ),
            (
                "other algorithm prefix",
                ts.clone(),
                format!("sha1={}", bare_hex(&good)),
                BODY,
                Err(WebhookAuthError::MalformedSignature),
            ),
        ];
        for (what, timestamp, signature, body, want) in cases {
            let got = verify_signature(SECRET, &timestamp, &signature, body, now(), window);
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn replay_cache_refuses_second_use_and_forgets_after_window() {
        let window = Duration::from_secs(60);
        let mut cache = ReplayCache::new(10);
        let ts = NOW.to_string();
        let signature = sign(SECRET, NOW, BODY);
        assert_eq!(
            cache.verify_and_record(SECRET, &ts, &signature, BODY, now(), window),
            Ok(())
        );
        // The same bytes again, also with the other accepted spelling of the signature.
        assert_eq!(
            cache.verify_and_record(SECRET, &ts, &signature, BODY, now(), window),
            Err(WebhookAuthError::Replayed)
        );
        assert_eq!(
            cache.verify_and_record(
                SECRET,
                &ts,
                &bare_hex(&signature).to_uppercase(),
                BODY,
                now(),
                window
            ),
            Err(WebhookAuthError::Replayed)
        );
        // A badly signed request is refused before it can touch the cache.
        assert_eq!(
            cache.verify_and_record(SECRET, &ts, &"0".repeat(64), BODY, now(), window),
            Err(WebhookAuthError::BadSignature)
        );
        assert_eq!(cache.len(), 1);
        // Once the window has passed the timestamp check refuses it, and the entry is gone.
        let later = jiff::Timestamp::from_second(NOW + 61).unwrap();
        assert!(matches!(
            cache.verify_and_record(SECRET, &ts, &signature, BODY, later, window),
            Err(WebhookAuthError::OutsideWindow { .. })
        ));
        let fresh = sign(SECRET, NOW + 61, BODY);
        assert_eq!(
            cache.verify_and_record(SECRET, &(NOW + 61).to_string(), &fresh, BODY, later, window),
            Ok(())
        );
        assert_eq!(cache.len(), 1, "the expired entry was forgotten");
    }

    #[test]
    fn replay_cache_fails_closed_when_full() {
        let window = Duration::from_secs(60);
        let mut cache = ReplayCache::new(2);
        for i in 0..2 {
            let body = format!("{{\"n\":{i}}}");
            let sig = sign(SECRET, NOW, body.as_bytes());
            assert_eq!(
                cache.verify_and_record(
                    SECRET,
                    &NOW.to_string(),
                    &sig,
                    body.as_bytes(),
                    now(),
                    window
                ),
                Ok(())
            );
        }
        let sig = sign(SECRET, NOW, BODY);
        assert_eq!(
            cache.verify_and_record(SECRET, &NOW.to_string(), &sig, BODY, now(), window),
            Err(WebhookAuthError::ReplayCacheFull)
        );
    }

    #[test]
    fn request_parsing_and_validation() {
        let ok = RoleBindingRequest::from_json(BODY).unwrap();
        assert_eq!(ok.action, BindingAction::Bind);
        assert_eq!(ok.role, InstanceRole::View);
        assert_eq!(
            ok.subject,
            BindingSubject {
                kind: SubjectKind::User,
                name: "alice".into()
            }
        );
        let binding = ok.desired_binding();
        assert_eq!(
            binding.metadata.name.as_deref(),
            Some(ok.binding_name().as_str())
        );
        assert_eq!(binding.role_ref.name, "kairship:instance:prod:view");

        let bad: &[(&str, &str)] = &[
            ("not json", "bind alice"),
            (
                "unknown action",
                r#"{"action":"grant","instance":"prod","role":"view","subject":{"kind":"User","name":"a"}}"#,
            ),
            (
                "unknown role",
                r#"{"action":"bind","instance":"prod","role":"owner","subject":{"kind":"User","name":"a"}}"#,
            ),
            (
                "unknown kind",
                r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"ServiceAccount","name":"a"}}"#,
            ),
            (
                "unknown field",
                r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"User","name":"a"},"x":1}"#,
            ),
            (
                "missing subject",
                r#"{"action":"unbind","instance":"prod","role":"view"}"#,
            ),
            (
                "bad instance",
                r#"{"action":"bind","instance":"Prod!","role":"view","subject":{"kind":"User","name":"a"}}"#,
            ),
            (
                "empty subject",
                r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"Group","name":"  "}}"#,
            ),
            (
                "padded subject",
                r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"User","name":" a"}}"#,
            ),
            (
                "control char",
                r#"{"action":"bind","instance":"prod","role":"view","subject":{"kind":"User","name":"a\nb"}}"#,
            ),
        ];
        for (what, body) in bad {
            assert!(
                RoleBindingRequest::from_json(body.as_bytes()).is_err(),
                "{what} should be refused"
            );
        }
        let long = format!(
            r#"{{"action":"bind","instance":"prod","role":"view","subject":{{"kind":"User","name":"{}"}}}}"#,
            "a".repeat(MAX_SUBJECT_NAME_LEN + 1)
        );
        assert!(matches!(
            RoleBindingRequest::from_json(long.as_bytes()),
            Err(RoleBindingRequestError::SubjectTooLong(1025))
        ));
    }
}
