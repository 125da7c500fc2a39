//! Instance clients from the host cluster: the kubeconfig of each Instance (its
//! `kubeconfigSecretRef`, or the Secret the karmada-operator publishes), kept while the
//! Instance and its kubeconfig stay the same.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use kube::core::Status;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use kube_kit::client::{ClientOptions, client_from_kubeconfig_yaml};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::controllers::connection::find_kubeconfig;
use crate::instance::Instance;
use crate::router::{InstanceClients, InstanceConnection, InstanceIdentity, RouterError};

struct Cached {
    identity: InstanceIdentity,
    /// `metadata.generation` of the Instance the client was built from: a spec change (e.g.
    /// another kubeconfig Secret) moves it.
    generation: Option<i64>,
    client: Client,
    /// When the kubeconfig was last read; `None`: read it again before the next use.
    checked: Option<Instant>,
}

/// Instances as the host watch sees them.
#[derive(Default)]
struct Watched {
    /// The initial list completed and the watch is not failing: `objects` can be trusted.
    trusted: bool,
    objects: HashMap<String, Arc<Instance>>,
    /// UIDs of Instances seen deleted: a UID never comes back, so a client for one of them is
    /// never kept, whatever a lagging read says. One short string per deleted Instance.
    deleted: HashSet<String>,
}

fn uid_of(object: &Instance) -> &str {
    object.metadata.uid.as_deref().unwrap_or_default()
}

/// What a change of an Instance seen on the host means for the client built for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientFate {
    /// Same Instance, same spec: the client stays.
    Keep,
    /// Same Instance, changed spec: its kubeconfig is read again before the next use.
    Recheck,
    /// The Instance is gone or was re-created: the client and everything built on it go.
    Drop,
}

/// The fate of a client built for the Instance `uid` at `generation`, now that the host shows
/// `seen` (`None`: no such Instance).
pub fn client_fate(uid: &str, generation: Option<i64>, seen: Option<&Instance>) -> ClientFate {
    let Some(seen) = seen else {
        return ClientFate::Drop;
    };
    if seen.metadata.uid.as_deref().unwrap_or_default() != uid {
        ClientFate::Drop
    } else if seen.metadata.generation != generation {
        ClientFate::Recheck
    } else {
        ClientFate::Keep
    }
}

/// [`InstanceClients`] that know the Instances of the host cluster and build a client from each
/// one's kubeconfig Secret.
///
/// With [`HostInstanceClients::watch_instances`] running, Instances come from a watch: a
/// deleted or re-created Instance loses its client as soon as the watch reports it, and a
/// changed spec makes its kubeconfig be read again. The kubeconfig Secret itself is read again
/// every `refresh` (on use, and in the background for every client held), and a changed
/// Secret (another resourceVersion) gives a new client. Each such change is announced through
/// [`InstanceClients::changes`]. An Instance the watch has not seen (yet) is read from the host,
/// so a new one is served at once; a UID the watch saw deleted is never served again. Without
/// the watch, the Instance is read from the host every `refresh` instead.
pub struct HostInstanceClients {
    host: Client,
    options: ClientOptions,
    timeout: Duration,
    refresh: Duration,
    clients: Mutex<HashMap<String, Cached>>,
    watched: Mutex<Watched>,
    changes: watch::Sender<u64>,
}

impl std::fmt::Debug for HostInstanceClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostInstanceClients")
            .field("timeout", &self.timeout)
            .field("refresh", &self.refresh)
            .finish_non_exhaustive()
    }
}

fn unavailable(instance: &str, message: String) -> RouterError {
    RouterError::Api {
        target: format!("instance {instance}"),
        status: Box::new(Status::failure(&message, "ServiceUnavailable").with_code(503)),
    }
}

fn unknown(instance: &str) -> RouterError {
    RouterError::UnknownInstance {
        instance: instance.to_owned(),
    }
}

/// The Instance as the host watch knows it: `Some(None)` when the trusted watch has no such
/// Instance, `None` when the watch cannot tell.
type WatchedInstance = Option<Option<Arc<Instance>>>;

impl HostInstanceClients {
    /// Clients for the instances of `host`; `options` apply to every instance client, each
    /// host read may take `timeout`, and a kubeconfig is read again after `refresh`.
    pub fn new(host: Client, options: ClientOptions, timeout: Duration, refresh: Duration) -> Self {
        HostInstanceClients {
            host,
            options,
            timeout,
            refresh,
            clients: Mutex::new(HashMap::new()),
            watched: Mutex::new(Watched::default()),
            changes: watch::Sender::new(0),
        }
    }

    fn lock_clients(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.clients.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_watched(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn announce(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn deleted(&self, uid: &str) -> bool {
        self.lock_watched().deleted.contains(uid)
    }

    fn watched(&self, instance: &str) -> WatchedInstance {
        let watched = self.lock_watched();
        watched
            .trusted
            .then(|| watched.objects.get(instance).cloned())
    }

    /// The held connection of `instance` when it may be used without reading anything: built
    /// for the Instance `uid` (when known) and checked within `refresh`.
    fn fresh(&self, instance: &str, uid: Option<&str>) -> Option<InstanceConnection> {
        let clients = self.lock_clients();
        let cached = clients.get(instance)?;
        let fresh = cached.checked.is_some_and(|c| c.elapsed() < self.refresh);
        let same = uid.is_none_or(|uid| cached.identity.uid == uid);
        (fresh && same).then(|| InstanceConnection {
            client: cached.client.clone(),
            identity: cached.identity.clone(),
        })
    }

    /// Forgets the client of `instance` (deleted, or its kubeconfig is gone) and announces it.
    pub fn forget(&self, instance: &str) {
        if self.lock_clients().remove(instance).is_some() {
            tracing::info!(
                instance,
                "instance deleted or re-created; its client is dropped"
            );
            self.announce();
        }
    }

    /// Keeps `cached` as the client of `instance`, announcing a change of identity.
    fn store(&self, instance: &str, cached: Cached) -> InstanceConnection {
        let connection = InstanceConnection {
            client: cached.client.clone(),
            identity: cached.identity.clone(),
        };
        let replaced = self.lock_clients().insert(instance.to_owned(), cached);
        if replaced.is_some_and(|old| old.identity != connection.identity) {
            tracing::info!(
                instance,
                "instance credentials changed; its client is rebuilt"
            );
            self.announce();
        }
        connection
    }

    async fn read_instance(&self, instance: &str) -> Result<Option<Instance>, RouterError> {
        let api: Api<Instance> = Api::all(self.host.clone());
        tokio::time::timeout(self.timeout, api.get_opt(instance))
            .await
            .map_err(|_| {
                unavailable(
                    instance,
                    format!("the host cluster did not answer within {:?}", self.timeout),
                )
            })?
            .map_err(|e| RouterError::from_kube(format!("instance {instance}"), e))
    }

    /// Reads the kubeconfig of `object` and returns the client for it, reusing the held one
    /// when the kubeconfig did not change.
    async fn connect_to(
        &self,
        instance: &str,
        object: &Instance,
    ) -> Result<InstanceConnection, RouterError> {
        let kubeconfig = match find_kubeconfig(&self.host, object, self.timeout).await {
            Ok(Some(kubeconfig)) => kubeconfig,
            Ok(None) => {
                // Credentials withdrawn: the old ones must not keep serving.
                self.forget(instance);
                return Err(unavailable(
                    instance,
                    format!("instance {instance} has no kubeconfig published yet"),
                ));
            }
            Err(e) => return Err(unavailable(instance, e.to_string())),
        };
        let identity = InstanceIdentity {
            uid: object.metadata.uid.clone().unwrap_or_default(),
            credentials: kubeconfig.key.clone(),
        };
        let generation = object.metadata.generation;
        let held = self
            .lock_clients()
            .get(instance)
            .filter(|c| c.identity == identity)
            .map(|c| c.client.clone());
        let client = match held {
            Some(client) => client,
            None => {
                client_from_kubeconfig_yaml(&kubeconfig.yaml, None, &self.options, &kubeconfig.key)
                    .await
                    .map_err(|e| unavailable(instance, format!("instance {instance}: {e}")))?
            }
        };
        let connection = self.store(
            instance,
            Cached {
                identity,
                generation,
                client,
                checked: Some(Instant::now()),
            },
        );
        // The Instance may have gone while the Secret was read. Checked after storing: a
        // deletion reported later finds the stored client and drops it.
        if self.deleted(&connection.identity.uid) {
            self.forget(instance);
            return Err(unknown(instance));
        }
        Ok(connection)
    }

    /// Applies what the host watch reports about `instance` to its client.
    fn follow(&self, instance: &str, seen: Option<&Instance>) {
        let fate = {
            let mut clients = self.lock_clients();
            let Some(cached) = clients.get_mut(instance) else {
                return;
            };
            let fate = client_fate(&cached.identity.uid, cached.generation, seen);
            if fate == ClientFate::Recheck {
                cached.checked = None;
            }
            fate
        };
        if fate == ClientFate::Drop {
            self.forget(instance);
        }
    }

    /// Follows the host's Instances until `shutdown`: deletions and re-creations drop clients
    /// at once, and every `refresh` the kubeconfig of each held client is read again. Watch
    /// errors are retried with backoff; meanwhile Instances are read from the host on use.
    pub async fn watch_instances(self: Arc<Self>, shutdown: CancellationToken) {
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = self.follow_instances() => {}
            () = self.recheck_held() => {}
        }
        self.lock_watched().trusted = false;
    }

    async fn follow_instances(&self) {
        let api: Api<Instance> = Api::all(self.host.clone());
        let mut events = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut listing: HashMap<String, Arc<Instance>> = HashMap::new();
        while let Some(item) = events.next().await {
            let event = match item {
                Ok(event) => event,
                Err(err) => {
                    let mut watched = self.lock_watched();
                    if watched.trusted {
                        tracing::warn!(error = %err, "watch of Instances failing; reading them on use");
                    }
                    watched.trusted = false;
                    continue;
                }
            };
            match event {
                Event::Init => listing.clear(),
                Event::InitApply(object) => {
                    if let Some(name) = object.metadata.name.clone() {
                        listing.insert(name, Arc::new(object));
                    }
                }
                Event::InitDone => {
                    let held: Vec<String> = self.lock_clients().keys().cloned().collect();
                    {
                        let mut watched = self.lock_watched();
                        let listed = std::mem::take(&mut listing);
                        // Instances gone while the watch was down.
                        let vanished: Vec<String> = watched
                            .objects
                            .values()
                            .filter(|old| {
                                let name = old.metadata.name.as_deref().unwrap_or_default();
                                listed
                                    .get(name)
                                    .is_none_or(|new| uid_of(new) != uid_of(old))
                            })
                            .map(|old| uid_of(old).to_owned())
                            .collect();
                        watched.deleted.extend(vanished);
                        watched.objects = listed;
                        watched.trusted = true;
                    }
                    for name in held {
                        let seen = self.lock_watched().objects.get(&name).cloned();
                        self.follow(&name, seen.as_deref());
                    }
                }
                Event::Apply(object) => {
                    let Some(name) = object.metadata.name.clone() else {
                        continue;
                    };
                    let object = Arc::new(object);
                    {
                        let mut watched = self.lock_watched();
                        watched.objects.insert(name.clone(), object.clone());
                        watched.trusted = true;
                    }
                    self.follow(&name, Some(&object));
                }
                Event::Delete(object) => {
                    let Some(name) = object.metadata.name.clone() else {
                        continue;
                    };
                    {
                        let mut watched = self.lock_watched();
                        watched.objects.remove(&name);
                        watched.deleted.insert(uid_of(&object).to_owned());
                    }
                    self.follow(&name, None);
                }
            }
        }
    }

    /// Reads the kubeconfig of every held client again once it is older than `refresh`, so that
    /// rotated credentials take over (and the old ones stop being used) without waiting for a
    /// request.
    async fn recheck_held(&self) {
        // A zero period would make `interval` panic (and spin).
        let mut tick = tokio::time::interval(self.refresh.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let due: Vec<String> = self
                .lock_clients()
                .iter()
                .filter(|(_, c)| c.checked.is_none_or(|t| t.elapsed() >= self.refresh))
                .map(|(name, _)| name.clone())
                .collect();
            for instance in due {
                if let Err(err) = self.connect(&instance).await {
                    tracing::debug!(instance, error = %err, "re-reading the instance's kubeconfig failed");
                }
            }
        }
    }
}

#[async_trait]
impl InstanceClients for HostInstanceClients {
    async fn connect(&self, instance: &str) -> Result<InstanceConnection, RouterError> {
        let object = match self.watched(instance) {
            // Not (yet) seen by the watch: it may just have been created.
            Some(None) => match self.read_instance(instance).await? {
                Some(object) if !self.deleted(uid_of(&object)) => Arc::new(object),
                _ => {
                    self.forget(instance);
                    return Err(unknown(instance));
                }
            },
            Some(Some(object)) => {
                if let Some(connection) = self.fresh(instance, Some(uid_of(&object))) {
                    return Ok(connection);
                }
                object
            }
            None => {
                if let Some(connection) = self.fresh(instance, None) {
                    return Ok(connection);
                }
                match self.read_instance(instance).await? {
                    Some(object) if !self.deleted(uid_of(&object)) => Arc::new(object),
                    _ => {
                        self.forget(instance);
                        return Err(unknown(instance));
                    }
                }
            }
        };
        if let Some(cached_uid) = self.current(instance).map(|i| i.uid)
            && uid_of(&object) != cached_uid
        {
            // Re-created: nothing of the former Instance may serve the new one.
            self.forget(instance);
        }
        self.connect_to(instance, &object).await
    }

    fn current(&self, instance: &str) -> Option<InstanceIdentity> {
        self.lock_clients()
            .get(instance)
            .map(|c| c.identity.clone())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    fn instance(uid: &str, generation: Option<i64>) -> Instance {
        let mut object: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": "kairship.io/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": "prod"},
            "spec": {"mode": "Adopt"}
        }))
        .unwrap();
        object.metadata = ObjectMeta {
            name: Some("prod".into()),
            uid: Some(uid.into()),
            generation,
            ..ObjectMeta::default()
        };
        object
    }

    #[test]
    fn client_fates_table() {
        for (seen, want) in [
            (None, ClientFate::Drop),
            (Some(instance("u2", Some(1))), ClientFate::Drop),
            (Some(instance("u1", Some(2))), ClientFate::Recheck),
            (Some(instance("u1", None)), ClientFate::Recheck),
            (Some(instance("u1", Some(1))), ClientFate::Keep),
        ] {
            assert_eq!(
                client_fate("u1", Some(1), seen.as_ref()),
                want,
                "{:?}",
                seen.as_ref().map(|s| &s.metadata)
            );
        }
    }
}
