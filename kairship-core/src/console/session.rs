//! Console sessions kept by the browser: the session (its id, the bearer token it signed in
//! with, its CSRF token and its expiry) is sealed into the cookie with AES-256-GCM, so any API
//! server replica holding the key opens it and no replica keeps sessions in memory.
//!
//! Keys come from a [`SessionStore`] (in production a Secret in the host cluster,
//! [`super::session_store`]): the newest key seals, older keys still open cookies until every
//! cookie they sealed has expired. Sign-out records the session id in the store's revocation
//! list, which every replica reads, so a copy of the cookie is refused everywhere.
//!
//! The CSRF token is part of the sealed session, so every replica checks the same one. The
//! token inside the cookie is never logged ([`BearerToken`] prints redacted) and never
//! reaches HTML: the browser only holds its ciphertext.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

use crate::api::BearerToken;

/// The session cookie's name.
pub const COOKIE_NAME: &str = "kairship_session";
/// The path the cookie is sent on (the console's prefix).
pub const COOKIE_PATH: &str = "/ui";
/// How long a session lasts after sign-in.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// Length of a session key (AES-256).
pub const KEY_LEN: usize = 32;

/// One signed-in browser, as opened from its cookie.
#[derive(Clone, Debug)]
pub struct Session {
    /// The session's id (what sign-out revokes).
    pub id: String,
    /// The bearer token the user signed in with (sent to the API on each request).
    pub token: BearerToken,
    /// The session's CSRF token (hidden form field or `X-CSRF-Token` header).
    pub csrf: String,
    /// When the session ends, in seconds since the Unix epoch.
    pub expires: u64,
}

/// What is sealed into the cookie.
#[derive(Serialize, Deserialize)]
struct Sealed {
    sid: String,
    token: String,
    csrf: String,
    exp: u64,
}

/// Why a session could not be made or read.
#[derive(Clone, Debug, thiserror::Error)]
pub enum SessionError {
    /// The system random number generator failed.
    #[error("the system random number generator failed")]
    Random,
    /// The store of keys and revocations could not be reached or written.
    #[error("console sessions are unavailable: {0}")]
    Store(String),
    /// The store holds no usable key.
    #[error("console sessions are unavailable: no session key")]
    NoKey,
}

/// One session key: its id (named in each cookie it sealed), when it was made and its bytes.
#[derive(Clone)]
pub struct SessionKey {
    /// `<created, 10 digits>-<random hex>`, the name it has in the store.
    pub id: String,
    /// When the key was made, in seconds since the Unix epoch.
    pub created: u64,
    bytes: [u8; KEY_LEN],
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl SessionKey {
    /// A fresh random key made at `now`.
    pub fn generate(rng: &SystemRandom, now: u64) -> Result<SessionKey, SessionError> {
        let mut bytes = [0u8; KEY_LEN];
        rng.fill(&mut bytes).map_err(|_| SessionError::Random)?;
        let mut tag = [0u8; 4];
        rng.fill(&mut tag).map_err(|_| SessionError::Random)?;
        Ok(SessionKey {
            id: format!("{now:010}-{}", hex(&tag)),
            created: now,
            bytes,
        })
    }

    /// The key stored under `id` with `bytes`; `None` when either is malformed.
    pub fn from_stored(id: &str, bytes: &[u8]) -> Option<SessionKey> {
        let (created, tag) = id.split_once('-')?;
        if created.len() != 10 || tag.is_empty() || !tag.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        Some(SessionKey {
            id: id.to_owned(),
            created: created.parse().ok()?,
            bytes: bytes.try_into().ok()?,
        })
    }

    /// The key's bytes (written to the store only).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn aead(&self) -> Option<LessSafeKey> {
        UnboundKey::new(&AES_256_GCM, &self.bytes)
            .ok()
            .map(LessSafeKey::new)
    }
}

/// The keys in use, newest first: the first seals, all open.
#[derive(Clone, Debug, Default)]
pub struct KeyRing {
    keys: Vec<SessionKey>,
}

impl KeyRing {
    /// A ring of `keys` in any order.
    pub fn new(mut keys: Vec<SessionKey>) -> KeyRing {
        keys.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| b.id.cmp(&a.id)));
        KeyRing { keys }
    }

    /// The keys, newest first.
    pub fn keys(&self) -> &[SessionKey] {
        &self.keys
    }

    /// Whether the ring has key `id`.
    pub fn has(&self, id: &str) -> bool {
        self.keys.iter().any(|k| k.id == id)
    }

    /// The cookie value sealing `session` with the newest key: `<key id>.<nonce|ciphertext>`.
    pub fn seal(&self, session: &Session, rng: &SystemRandom) -> Result<String, SessionError> {
        self.seal_value(
            &Sealed {
                sid: session.id.clone(),
                token: session.token.expose().to_owned(),
                csrf: session.csrf.clone(),
                exp: session.expires,
            },
            rng,
        )
    }

    /// The session sealed in `cookie`, if a key of the ring opens it and it has not expired
    /// at `now`. Anything else (tampered, foreign, expired) is `None`.
    pub fn open(&self, cookie: &str, now: u64) -> Option<Session> {
        let s: Sealed = self.open_value(cookie)?;
        (s.exp > now).then(|| Session {
            id: s.sid,
            token: BearerToken::new(s.token),
            csrf: s.csrf,
            expires: s.exp,
        })
    }

    /// `value` as JSON sealed with the newest key: `<key id>.<nonce|ciphertext>`.
    pub fn seal_value<T: Serialize>(
        &self,
        value: &T,
        rng: &SystemRandom,
    ) -> Result<String, SessionError> {
        let key = self.keys.first().ok_or(SessionError::NoKey)?;
        let aead = key.aead().ok_or(SessionError::NoKey)?;
        let mut nonce = [0u8; NONCE_LEN];
        rng.fill(&mut nonce).map_err(|_| SessionError::Random)?;
        let mut data = serde_json::to_vec(value).map_err(|_| SessionError::NoKey)?;
        aead.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(key.id.as_bytes()),
            &mut data,
        )
        .map_err(|_| SessionError::NoKey)?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(format!("{}.{}", key.id, URL_SAFE_NO_PAD.encode(out)))
    }

    /// What [`KeyRing::seal_value`] sealed in `cookie`, if a key of the ring opens it.
    pub fn open_value<T: serde::de::DeserializeOwned>(&self, cookie: &str) -> Option<T> {
        let (id, sealed) = cookie.split_once('.')?;
        let key = self.keys.iter().find(|k| k.id == id)?;
        let mut data = URL_SAFE_NO_PAD.decode(sealed).ok()?;
        if data.len() < NONCE_LEN {
            return None;
        }
        let mut rest = data.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&data).ok()?;
        let plain = key
            .aead()?
            .open_in_place(nonce, Aad::from(key.id.as_bytes()), &mut rest)
            .ok()?;
        serde_json::from_slice(plain).ok()
    }
}

/// The key id a cookie names (to notice a key another replica added).
pub fn cookie_key_id(cookie: &str) -> Option<&str> {
    cookie.split_once('.').map(|(id, _)| id)
}

/// What a key store does to its keys at `now`: add a key when the newest is older than
/// `rotate_every` (or there is none), and drop every key that a newer key superseded more
/// than `ttl` ago (no cookie it sealed is still valid). Returns the key ids to drop and
/// whether to add one.
pub fn rotation_plan(
    keys: &KeyRing,
    now: u64,
    rotate_every: Duration,
    ttl: Duration,
) -> (Vec<String>, bool) {
    let add = keys
        .keys()
        .first()
        .is_none_or(|newest| now.saturating_sub(newest.created) >= rotate_every.as_secs());
    // keys()[i] was superseded when keys()[i - 1] was made.
    let drop = keys
        .keys()
        .windows(2)
        .filter(|pair| now.saturating_sub(pair[0].created) > ttl.as_secs())
        .map(|pair| pair[1].id.clone())
        .collect();
    (drop, add)
}

/// Revoked session ids and when each session would have expired; entries past their expiry
/// are dropped at `now` (a revoked cookie that expired is refused anyway).
pub fn prune_revocations(list: &mut BTreeMap<String, u64>, now: u64) {
    list.retain(|_, exp| *exp > now);
}

/// Where the session keys and the revocation list live, shared by every replica.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The keys in use; `refresh` reads them again instead of using a cached copy.
    async fn keys(&self, refresh: bool) -> Result<Arc<KeyRing>, SessionError>;
    /// Whether session `id` was signed out (read with a short cache).
    async fn revoked(&self, id: &str) -> Result<bool, SessionError>;
    /// Records that session `id`, valid until `expires`, was signed out.
    async fn revoke(&self, id: &str, expires: u64) -> Result<(), SessionError>;
}

/// Keys and sign-outs of one process only (a key made at start, sign-outs in memory): for a
/// single replica that need not survive restarts, and for benchmarks.
pub struct LocalSessionStore {
    ring: Arc<KeyRing>,
    revoked: std::sync::Mutex<BTreeMap<String, u64>>,
}

impl LocalSessionStore {
    /// A store with one fresh random key.
    pub fn new() -> Result<LocalSessionStore, SessionError> {
        let key = SessionKey::generate(&SystemRandom::new(), unix_now())?;
        Ok(LocalSessionStore {
            ring: Arc::new(KeyRing::new(vec![key])),
            revoked: std::sync::Mutex::new(BTreeMap::new()),
        })
    }
}

#[async_trait]
impl SessionStore for LocalSessionStore {
    async fn keys(&self, _refresh: bool) -> Result<Arc<KeyRing>, SessionError> {
        Ok(self.ring.clone())
    }

    async fn revoked(&self, id: &str) -> Result<bool, SessionError> {
        Ok(self
            .revoked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(id))
    }

    async fn revoke(&self, id: &str, expires: u64) -> Result<(), SessionError> {
        let mut list = self.revoked.lock().unwrap_or_else(|e| e.into_inner());
        prune_revocations(&mut list, unix_now());
        list.insert(id.to_owned(), expires);
        Ok(())
    }
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex(rng: &SystemRandom) -> Result<String, SessionError> {
    let mut bytes = [0u8; 32];
    rng.fill(&mut bytes).map_err(|_| SessionError::Random)?;
    Ok(hex(&bytes))
}

/// The console's sessions: sealed cookies opened with the store's keys.
pub struct Sessions {
    store: Arc<dyn SessionStore>,
    ttl: Duration,
    rng: SystemRandom,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// Sessions lasting `ttl` each, keyed and revoked through `store`.
    pub fn new(store: Arc<dyn SessionStore>, ttl: Duration) -> Sessions {
        Sessions {
            store,
            ttl,
            rng: SystemRandom::new(),
        }
    }

    /// A new session for `token`: its cookie value and the session.
    pub async fn create(&self, token: BearerToken) -> Result<(String, Session), SessionError> {
        self.create_until(token, u64::MAX).await
    }

    /// A new session for `token` that ends at `not_after` (Unix seconds) if that comes before
    /// the usual lifetime: a session signed in with an ID token ends when the token does.
    pub async fn create_until(
        &self,
        token: BearerToken,
        not_after: u64,
    ) -> Result<(String, Session), SessionError> {
        let session = Session {
            id: random_hex(&self.rng)?,
            token,
            csrf: random_hex(&self.rng)?,
            expires: not_after.min(unix_now() + self.ttl.as_secs()),
        };
        let cookie = self.store.keys(false).await?.seal(&session, &self.rng)?;
        Ok((cookie, session))
    }

    /// `value` sealed with the session keys (a sign-in in progress), for a cookie of its own.
    pub async fn seal_value<T: Serialize>(&self, value: &T) -> Result<String, SessionError> {
        self.store.keys(false).await?.seal_value(value, &self.rng)
    }

    /// What [`Sessions::seal_value`] sealed, read with the keys any replica holds.
    pub async fn open_value<T: serde::de::DeserializeOwned>(
        &self,
        cookie: &str,
    ) -> Result<Option<T>, SessionError> {
        let mut ring = self.store.keys(false).await?;
        if let Some(id) = cookie_key_id(cookie)
            && !ring.has(id)
        {
            ring = self.store.keys(true).await?;
        }
        Ok(ring.open_value(cookie))
    }

    /// The live session `cookie` holds: `Ok(None)` when it does not open, expired or was
    /// signed out; `Err` when the store cannot tell.
    pub async fn get(&self, cookie: &str) -> Result<Option<Session>, SessionError> {
        let mut ring = self.store.keys(false).await?;
        if let Some(id) = cookie_key_id(cookie)
            && !ring.has(id)
        {
            // Perhaps another replica rotated: read the keys again before refusing.
            ring = self.store.keys(true).await?;
        }
        let Some(session) = ring.open(cookie, unix_now()) else {
            return Ok(None);
        };
        if self.store.revoked(&session.id).await? {
            return Ok(None);
        }
        Ok(Some(session))
    }

    /// Ends `session` on every replica (sign-out).
    pub async fn revoke(&self, session: &Session) -> Result<(), SessionError> {
        self.store.revoke(&session.id, session.expires).await
    }

    /// How long a session lasts.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}

/// The `Set-Cookie` value of a new session.
pub fn session_cookie(value: &str, tls: bool, ttl: Duration) -> String {
    format!(
        "{COOKIE_NAME}={value}; Path={COOKIE_PATH}; Max-Age={}; HttpOnly; SameSite=Strict{}",
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

    fn key(created: u64, fill: u8) -> SessionKey {
        SessionKey::from_stored(&format!("{created:010}-ab"), &[fill; KEY_LEN]).unwrap()
    }

    fn session(exp: u64) -> Session {
        Session {
            id: "sid".into(),
            token: BearerToken::new("the-token"),
            csrf: "csrf".into(),
            expires: exp,
        }
    }

    #[test]
    fn sealed_cookies_open_with_any_ring_key_and_nothing_else() {
        let rng = SystemRandom::new();
        let old = key(100, 1);
        let new = key(200, 2);
        let sealed_old = KeyRing::new(vec![old.clone()])
            .seal(&session(1000), &rng)
            .unwrap();
        assert!(sealed_old.starts_with("0000000100-ab."));
        assert!(!sealed_old.contains("the-token"), "the token is encrypted");
        let ring = KeyRing::new(vec![old.clone(), new.clone()]);
        assert_eq!(ring.keys()[0].id, new.id, "the newest key seals");
        let sealed_new = ring.seal(&session(1000), &rng).unwrap();
        assert!(sealed_new.starts_with("0000000200-ab."));
        for cookie in [&sealed_old, &sealed_new] {
            let s = ring.open(cookie, 500).unwrap();
            assert_eq!(s.token.expose(), "the-token");
            assert_eq!(
                (s.id.as_str(), s.csrf.as_str(), s.expires),
                ("sid", "csrf", 1000)
            );
            assert!(ring.open(cookie, 1000).is_none(), "expired");
        }
        let only_new = KeyRing::new(vec![new.clone()]);
        assert!(only_new.open(&sealed_old, 500).is_none(), "dropped key");
        // Another key under the same id, a flipped byte, a renamed key id, garbage.
        let forged = KeyRing::new(vec![key(200, 9)]);
        assert!(forged.open(&sealed_new, 500).is_none());
        let mut flipped = sealed_new.clone().into_bytes();
        let last = flipped.len() - 3;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        assert!(ring.open(&flipped, 500).is_none());
        let renamed = sealed_new.replacen("0000000200", "0000000100", 1);
        assert!(
            ring.open(&renamed, 500).is_none(),
            "the key id is authenticated"
        );
        for junk in ["", ".", "x", "0000000200-ab.", "0000000200-ab.!!"] {
            assert!(ring.open(junk, 500).is_none(), "{junk:?}");
        }
        assert!(KeyRing::default().seal(&session(1), &rng).is_err());
    }

    #[test]
    fn stored_key_names_table() {
        for (id, len, ok) in [
            ("0000000100-ab", KEY_LEN, true),
            ("0000000100-ab", 16, false),
            ("100-ab", KEY_LEN, false),
            ("0000000100-", KEY_LEN, false),
            ("0000000100-zz", KEY_LEN, false),
            ("abcdefghij-ab", KEY_LEN, false),
            ("nodash", KEY_LEN, false),
        ] {
            assert_eq!(
                SessionKey::from_stored(id, &vec![0; len]).is_some(),
                ok,
                "{id} {len}"
            );
        }
        let rng = SystemRandom::new();
        let k = SessionKey::generate(&rng, 1_700_000_000).unwrap();
        let back = SessionKey::from_stored(&k.id, k.bytes()).unwrap();
        assert_eq!((back.created, back.id), (1_700_000_000, k.id.clone()));
        assert!(!format!("{k:?}").contains(&format!("{:?}", k.bytes())));
    }

    #[test]
    fn rotation_plan_table() {
        let day = Duration::from_secs(86_400);
        let ttl = Duration::from_secs(3_600);
        let ring = |created: &[u64]| KeyRing::new(created.iter().map(|c| key(*c, 0)).collect());
        let id = |c: u64| format!("{c:010}-ab");
        for (keys, now, want_drop, want_add) in [
            (vec![], 10, vec![], true),
            (vec![1000], 1000 + 86_399, vec![], false),
            (vec![1000], 1000 + 86_400, vec![], true),
            // The old key opens cookies sealed until the new one came, for one ttl more.
            (vec![1000, 90_000], 90_000 + 3_600, vec![], false),
            (vec![1000, 90_000], 90_000 + 3_601, vec![id(1000)], false),
            (
                vec![1, 2, 200_000],
                200_000 + 3_601,
                vec![id(2), id(1)],
                false,
            ),
        ] {
            let (drop, add) = rotation_plan(&ring(&keys), now, day, ttl);
            assert_eq!((drop, add), (want_drop, want_add), "{keys:?} at {now}");
        }
    }

    #[test]
    fn revocations_are_pruned_at_expiry() {
        let mut list = BTreeMap::from([("a".to_owned(), 10), ("b".to_owned(), 20)]);
        prune_revocations(&mut list, 10);
        assert_eq!(list.keys().collect::<Vec<_>>(), ["b"]);
    }

    #[tokio::test]
    async fn sessions_are_random_expire_and_end() {
        let store = Arc::new(LocalSessionStore::new().unwrap());
        let sessions = Sessions::new(store.clone(), Duration::from_secs(60));
        let (a, sa) = sessions.create(BearerToken::new("t1")).await.unwrap();
        let (b, sb) = sessions.create(BearerToken::new("t2")).await.unwrap();
        assert_ne!(sa.id, sb.id);
        assert_ne!(sa.csrf, sb.csrf);
        assert_eq!(sa.id.len(), 64);
        let got = sessions.get(&a).await.unwrap().unwrap();
        assert_eq!((got.token.expose(), got.csrf), ("t1", sa.csrf.clone()));
        sessions.revoke(&sa).await.unwrap();
        assert!(sessions.get(&a).await.unwrap().is_none(), "signed out");
        assert!(sessions.get(&b).await.unwrap().is_some());
        assert!(sessions.get("nope").await.unwrap().is_none());

        let short = Sessions::new(store, Duration::ZERO);
        let (c, _) = short.create(BearerToken::new("t3")).await.unwrap();
        assert!(short.get(&c).await.unwrap().is_none(), "expired");
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
