//! Console sessions: a random session id in an HttpOnly, SameSite=Strict cookie maps to the
//! bearer token in memory, so the token reaches the browser once (when pasted) and never
//! again. Each session carries its own CSRF token, required on every POST.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ring::rand::{SecureRandom, SystemRandom};

use crate::api::BearerToken;

/// The session cookie's name.
pub const COOKIE_NAME: &str = "kairship_session";
/// The path the cookie is sent on (the console's prefix).
pub const COOKIE_PATH: &str = "/ui";
/// How long a session lasts after sign-in.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Sessions kept at most; signing in beyond it first drops expired sessions, then the oldest.
const MAX_SESSIONS: usize = 10_000;

/// One signed-in browser.
#[derive(Clone, Debug)]
pub struct Session {
    /// The bearer token the user signed in with (sent to the API on each request).
    pub token: BearerToken,
    /// The session's CSRF token (hidden form field or `X-CSRF-Token` header).
    pub csrf: String,
    expires: Instant,
}

/// Why a session could not be created.
#[derive(Debug, thiserror::Error)]
#[error("the system random number generator failed")]
pub struct RandomError;

/// The sessions of one console, in memory (a restart signs everyone out).
#[derive(Debug)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
    ttl: Duration,
    rng: SystemRandom,
}

fn random_hex(rng: &SystemRandom) -> Result<String, RandomError> {
    let mut bytes = [0u8; 32];
    rng.fill(&mut bytes).map_err(|_| RandomError)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Sessions {
    /// Sessions lasting `ttl` each.
    pub fn new(ttl: Duration) -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            ttl,
            rng: SystemRandom::new(),
        }
    }

    /// A new session for `token`: its id (for the cookie) and the session.
    pub fn create(&self, token: BearerToken) -> Result<(String, Session), RandomError> {
        let id = random_hex(&self.rng)?;
        let session = Session {
            token,
            csrf: random_hex(&self.rng)?,
            expires: Instant::now() + self.ttl,
        };
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_SESSIONS {
            let now = Instant::now();
            map.retain(|_, s| s.expires > now);
            if map.len() >= MAX_SESSIONS
                && let Some(oldest) = map
                    .iter()
                    .min_by_key(|(_, s)| s.expires)
                    .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    /// The live session `id` names; an expired one is dropped.
    pub fn get(&self, id: &str) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(id) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(id);
                None
            }
            None => None,
        }
    }

    /// Ends session `id` (sign-out).
    pub fn remove(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }

    /// Sessions held.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The `Set-Cookie` value of a new session.
pub fn session_cookie(id: &str, tls: bool, ttl: Duration) -> String {
    format!(
        "{COOKIE_NAME}={id}; Path={COOKIE_PATH}; Max-Age={}; HttpOnly; SameSite=Strict{}",
        ttl.as_secs(),
        if tls { "; Secure" } else { "" }
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn cleared_cookie(tls: bool) -> String {
    format!(
        "{COOKIE_NAME}=; Path={COOKIE_PATH}; Max-Age=0; HttpOnly; SameSite=Strict{}",
        if tls { "; Secure" } else { "" }
    )
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie_value<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

/// Compares two secrets in time independent of where they differ.
pub fn secrets_equal(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_random_expire_and_end() {
        let sessions = Sessions::new(Duration::from_secs(60));
        let (a, sa) = sessions.create(BearerToken::new("t1")).unwrap();
        let (b, sb) = sessions.create(BearerToken::new("t2")).unwrap();
        assert_ne!(a, b);
        assert_ne!(sa.csrf, sb.csrf);
        assert_eq!(a.len(), 64);
        assert_eq!(sessions.get(&a).unwrap().token.expose(), "t1");
        sessions.remove(&a);
        assert!(sessions.get(&a).is_none());
        assert!(sessions.get(&b).is_some());
        assert!(sessions.get("nope").is_none());

        let short = Sessions::new(Duration::ZERO);
        let (c, _) = short.create(BearerToken::new("t3")).unwrap();
        assert!(short.get(&c).is_none(), "an expired session is refused");
        assert!(short.is_empty(), "and dropped");
    }

    #[test]
    fn cookie_flags() {
        let plain = session_cookie("abc", false, Duration::from_secs(10));
        assert_eq!(
            plain,
            "kairship_session=abc; Path=/ui; Max-Age=10; HttpOnly; SameSite=Strict"
        );
        assert!(session_cookie("abc", true, Duration::from_secs(10)).ends_with("; Secure"));
        assert!(cleared_cookie(false).contains("Max-Age=0"));
    }

    #[test]
    fn cookie_value_table() {
        for (header, want) in [
            ("kairship_session=abc", Some("abc")),
            ("a=1; kairship_session=xyz; b=2", Some("xyz")),
            ("kairship_sessionx=1", None),
            ("", None),
        ] {
            let mut headers = http::HeaderMap::new();
            headers.insert(http::header::COOKIE, header.parse().unwrap());
            assert_eq!(cookie_value(&headers, COOKIE_NAME), want, "{header}");
        }
    }

    #[test]
    fn secrets_equal_table() {
        assert!(secrets_equal("abc", "abc"));
        assert!(!secrets_equal("abc", "abd"));
        assert!(!secrets_equal("abc", "ab"));
        assert!(!secrets_equal("", "a"));
    }
}
