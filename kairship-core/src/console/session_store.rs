//! The console's session keys and revocation list in the host cluster, shared by every API
//! server replica.
//!
//! - Keys: the Secret `<namespace>/kairship-console-session` (by default), one data entry per
//!   key named `<created>-<hex>`. The API server creates it when absent and rotates it: a
//!   replica that finds the newest key older than `rotate_every` adds one, and keys superseded
//!   more than a session lifetime ago are removed. Writes carry the read `resourceVersion`, so
//!   two replicas rotating at once agree (the loser reads again). Read again every
//!   `keys_refresh`, or at once when a cookie names a key this replica has not seen.
//! - Revocations: the ConfigMap `<namespace>/kairship-console-revocations`, session id ->
//!   the session's expiry (Unix seconds), pruned on each write. Read with a
//!   `revocations_refresh` cache, so a sign-out is seen by every replica within that time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use ring::rand::SystemRandom;

use super::session::{
    KeyRing, SessionError, SessionKey, SessionStore, prune_revocations, rotation_plan, unix_now,
};

/// Where the keys and revocations are kept and how often they are read.
#[derive(Clone, Debug)]
pub struct HostSessionConfig {
    /// The namespace of the Secret and the ConfigMap (the API server's own).
    pub namespace: String,
    /// The Secret holding the keys.
    pub secret_name: String,
    /// The ConfigMap holding the revocations.
    pub revocations_name: String,
    /// How old the newest key may get before a new one seals.
    pub rotate_every: Duration,
    /// How long a session lasts (keys are kept that long after being superseded).
    pub session_ttl: Duration,
    /// How long the keys read are used before reading them again.
    pub keys_refresh: Duration,
    /// How long the revocations read are used before reading them again.
    pub revocations_refresh: Duration,
}

/// The Secret's default name.
pub const DEFAULT_SECRET_NAME: &str = "kairship-console-session";
/// The revocation ConfigMap's default name.
pub const DEFAULT_REVOCATIONS_NAME: &str = "kairship-console-revocations";

impl HostSessionConfig {
    /// The defaults in `namespace`: keys rotated daily and read every minute, revocations
    /// read every second.
    pub fn in_namespace(namespace: impl Into<String>, session_ttl: Duration) -> Self {
        HostSessionConfig {
            namespace: namespace.into(),
            secret_name: DEFAULT_SECRET_NAME.into(),
            revocations_name: DEFAULT_REVOCATIONS_NAME.into(),
            rotate_every: Duration::from_secs(24 * 3600),
            session_ttl,
            keys_refresh: Duration::from_secs(60),
            revocations_refresh: Duration::from_secs(1),
        }
    }
}

type Cached<T> = Mutex<Option<(Instant, Arc<T>)>>;

/// Keys and revocations in the host cluster.
pub struct HostSessionStore {
    secrets: Api<Secret>,
    config_maps: Api<ConfigMap>,
    config: HostSessionConfig,
    rng: SystemRandom,
    keys: Cached<KeyRing>,
    revocations: Cached<BTreeMap<String, u64>>,
}

impl std::fmt::Debug for HostSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSessionStore")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Attempts at a read-modify-write before giving up on conflicts.
const WRITE_ATTEMPTS: usize = 5;

fn store_error(what: &str, err: kube::Error) -> SessionError {
    SessionError::Store(format!("{what}: {err}"))
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

fn fresh<T>(cache: &Cached<T>, max_age: Duration) -> Option<Arc<T>> {
    let guard = cache.lock().unwrap_or_else(|e| e.into_inner());
    guard
        .as_ref()
        .filter(|(at, _)| at.elapsed() < max_age)
        .map(|(_, v)| v.clone())
}

fn remember<T>(cache: &Cached<T>, value: T) -> Arc<T> {
    let value = Arc::new(value);
    *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), value.clone()));
    value
}

/// The keys a Secret holds; malformed entries are skipped.
fn ring_of(secret: &Secret) -> KeyRing {
    KeyRing::new(
        secret
            .data
            .iter()
            .flatten()
            .filter_map(|(id, bytes)| SessionKey::from_stored(id, &bytes.0))
            .collect(),
    )
}

impl HostSessionStore {
    /// The store `config` describes, through `host`.
    pub fn new(host: kube::Client, config: HostSessionConfig) -> Self {
        HostSessionStore {
            secrets: Api::namespaced(host.clone(), &config.namespace),
            config_maps: Api::namespaced(host, &config.namespace),
            config,
            rng: SystemRandom::new(),
            keys: Mutex::new(None),
            revocations: Mutex::new(None),
        }
    }

    /// Reads the keys, creating the Secret or rotating its keys when due.
    async fn load_keys(&self) -> Result<KeyRing, SessionError> {
        let what = format!(
            "Secret {}/{}",
            self.config.namespace, self.config.secret_name
        );
        for _ in 0..WRITE_ATTEMPTS {
            let now = unix_now();
            let current = self
                .secrets
                .get_opt(&self.config.secret_name)
                .await
                .map_err(|e| store_error(&what, e))?;
            let ring = current.as_ref().map(ring_of).unwrap_or_default();
            let (drop, add) = rotation_plan(
                &ring,
                now,
                self.config.rotate_every,
                self.config.session_ttl,
            );
            if drop.is_empty() && !add {
                return Ok(ring);
            }
            let mut keys: Vec<SessionKey> = ring
                .keys()
                .iter()
                .filter(|k| !drop.contains(&k.id))
                .cloned()
                .collect();
            if add {
                keys.push(SessionKey::generate(&self.rng, now)?);
            }
            let data: BTreeMap<String, ByteString> = keys
                .iter()
                .map(|k| (k.id.clone(), ByteString(k.bytes().to_vec())))
                .collect();
            let written = match current {
                Some(mut secret) => {
                    secret.data = Some(data);
                    self.secrets
                        .replace(&self.config.secret_name, &PostParams::default(), &secret)
                        .await
                }
                None => {
                    let secret = Secret {
                        metadata: ObjectMeta {
                            name: Some(self.config.secret_name.clone()),
                            namespace: Some(self.config.namespace.clone()),
                            labels: Some(BTreeMap::from([(
                                "app.kubernetes.io/managed-by".to_owned(),
                                "kairship-apiserver".to_owned(),
                            )])),
                            ..ObjectMeta::default()
                        },
                        type_: Some("Opaque".into()),
                        data: Some(data),
                        ..Secret::default()
                    };
                    self.secrets.create(&PostParams::default(), &secret).await
                }
            };
            match written {
                Ok(secret) => {
                    tracing::info!(
                        secret = %what,
                        added = add,
                        dropped = drop.len(),
                        "console session keys rotated"
                    );
                    return Ok(ring_of(&secret));
                }
                // Another replica wrote first (409 on replace, or on create: AlreadyExists).
                Err(e) if is_conflict(&e) => continue,
                Err(e) => return Err(store_error(&what, e)),
            }
        }
        Err(SessionError::Store(format!(
            "{what}: still conflicting after {WRITE_ATTEMPTS} attempts"
        )))
    }

    async fn load_revocations(&self) -> Result<BTreeMap<String, u64>, SessionError> {
        let cm = self
            .config_maps
            .get_opt(&self.config.revocations_name)
            .await
            .map_err(|e| store_error(&self.revocations_what(), e))?;
        Ok(revocations_of(cm.as_ref()))
    }

    fn revocations_what(&self) -> String {
        format!(
            "ConfigMap {}/{}",
            self.config.namespace, self.config.revocations_name
        )
    }
}

fn revocations_of(cm: Option<&ConfigMap>) -> BTreeMap<String, u64> {
    cm.and_then(|c| c.data.as_ref())
        .map(|data| {
            data.iter()
                .filter_map(|(id, exp)| Some((id.clone(), exp.parse().ok()?)))
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait]
impl SessionStore for HostSessionStore {
    async fn keys(&self, refresh: bool) -> Result<Arc<KeyRing>, SessionError> {
        if !refresh && let Some(ring) = fresh(&self.keys, self.config.keys_refresh) {
            return Ok(ring);
        }
        let ring = self.load_keys().await?;
        Ok(remember(&self.keys, ring))
    }

    async fn revoked(&self, id: &str) -> Result<bool, SessionError> {
        let list = match fresh(&self.revocations, self.config.revocations_refresh) {
            Some(list) => list,
            None => remember(&self.revocations, self.load_revocations().await?),
        };
        Ok(list.contains_key(id))
    }

    async fn revoke(&self, id: &str, expires: u64) -> Result<(), SessionError> {
        let what = self.revocations_what();
        for _ in 0..WRITE_ATTEMPTS {
            let current = self
                .config_maps
                .get_opt(&self.config.revocations_name)
                .await
                .map_err(|e| store_error(&what, e))?;
            let mut list = revocations_of(current.as_ref());
            prune_revocations(&mut list, unix_now());
            list.insert(id.to_owned(), expires);
            let data = list
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect();
            let written = match current {
                Some(mut cm) => {
                    cm.data = Some(data);
                    self.config_maps
                        .replace(&self.config.revocations_name, &PostParams::default(), &cm)
                        .await
                }
                None => {
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(self.config.revocations_name.clone()),
                            namespace: Some(self.config.namespace.clone()),
                            ..ObjectMeta::default()
                        },
                        data: Some(data),
                        ..ConfigMap::default()
                    };
                    self.config_maps.create(&PostParams::default(), &cm).await
                }
            };
            match written {
                Ok(cm) => {
                    remember(&self.revocations, revocations_of(Some(&cm)));
                    return Ok(());
                }
                Err(e) if is_conflict(&e) => continue,
                Err(e) => return Err(store_error(&what, e)),
            }
        }
        Err(SessionError::Store(format!(
            "{what}: still conflicting after {WRITE_ATTEMPTS} attempts"
        )))
    }
}
