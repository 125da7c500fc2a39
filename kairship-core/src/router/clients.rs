//! How backends reach an instance's apiserver, and how they learn that an instance name no
//! longer stands for the Karmada they reached (deleted, re-created, or given other
//! credentials).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use futures::StreamExt;
use kube::core::{DynamicObject, Status, WatchEvent};
use tokio::sync::watch;

use super::backend::EventStream;
use super::error::RouterError;

/// Which Karmada an instance name stands for: the Instance object and the credentials used to
/// reach it. Whatever was built for one identity (a cache, discovery answers, a client, an open
/// watch) must not serve another.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceIdentity {
    /// `metadata.uid` of the Instance: a re-created instance of the same name has another.
    pub uid: String,
    /// Where the credentials came from, e.g. `namespace/secret@resourceVersion`; never the
    /// credentials themselves.
    pub credentials: String,
}

/// A client of an instance's apiserver and the identity it was built for.
#[derive(Clone)]
pub struct InstanceConnection {
    /// The client.
    pub client: kube::Client,
    /// The instance and credentials the client belongs to.
    pub identity: InstanceIdentity,
}

impl std::fmt::Debug for InstanceConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstanceConnection")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// Whether something built for `built_for` may still serve, now that the instance's identity is
/// `current` (`None`: the instance is gone or not known).
pub fn still_current(built_for: &InstanceIdentity, current: Option<&InstanceIdentity>) -> bool {
    current == Some(built_for)
}

/// Gives clients for instance apiservers and says when an instance changed.
#[async_trait]
pub trait InstanceClients: Send + Sync {
    /// The client of `instance` and its identity, checked now: an instance that no longer
    /// exists answers [`RouterError::UnknownInstance`].
    async fn connect(&self, instance: &str) -> Result<InstanceConnection, RouterError>;

    /// A client for `instance` (see [`InstanceClients::connect`]).
    async fn client(&self, instance: &str) -> Result<kube::Client, RouterError> {
        Ok(self.connect(instance).await?.client)
    }

    /// The identity of `instance` as last known, without asking anyone; `None` when the
    /// instance is gone (or was never connected to).
    fn current(&self, instance: &str) -> Option<InstanceIdentity>;

    /// A counter that moves each time an instance is deleted, re-created or given other
    /// credentials; holders compare [`InstanceClients::current`] with what they built for.
    fn changes(&self) -> watch::Receiver<u64>;
}

/// Resolves once `instance` no longer has `identity`.
pub fn identity_lost(
    clients: &Arc<dyn InstanceClients>,
    instance: &str,
    identity: &InstanceIdentity,
) -> impl Future<Output = ()> + Send + 'static {
    // Subscribed before the first look so that no change falls in between.
    let mut changes = clients.changes();
    let clients = clients.clone();
    let instance = instance.to_owned();
    let identity = identity.clone();
    async move {
        loop {
            if !still_current(&identity, clients.current(&instance).as_ref()) {
                return;
            }
            if changes.changed().await.is_err() {
                // Nobody can announce a change any more.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// The watch event that ends a stream whose instance changed: `410 Expired`, so that a watcher
/// lists again, and finds the instance gone (404) or the new one.
pub(crate) fn instance_changed_event(instance: &str) -> WatchEvent<DynamicObject> {
    let message = format!("instance {instance} was deleted or its credentials changed");
    WatchEvent::Error(Box::new(
        Status::failure(&message, "Expired").with_code(410),
    ))
}

/// Passes `events` through until `instance` no longer has `identity`, then ends them with
/// `instance_changed_event`, so that no event of a gone instance reaches anyone.
pub fn end_when_lost(
    events: EventStream,
    clients: &Arc<dyn InstanceClients>,
    instance: &str,
    identity: &InstanceIdentity,
) -> EventStream {
    let lost = Box::pin(identity_lost(clients, instance, identity));
    let instance = instance.to_owned();
    futures::stream::unfold(Some((events, lost, instance)), |state| async move {
        let (mut events, mut lost, instance) = state?;
        tokio::select! {
            biased;
            () = &mut lost => Some((Ok(instance_changed_event(&instance)), None)),
            next = events.next() => {
                let item = next?;
                Some((item, Some((events, lost, instance))))
            }
        }
    })
    .boxed()
}

struct StaticEntry {
    client: kube::Client,
    identity: InstanceIdentity,
}

/// A fixed table of instance clients. Each [`StaticInstanceClients::insert`] gives the instance
/// a new identity, as if it were re-created; [`StaticInstanceClients::remove`] deletes it.
pub struct StaticInstanceClients {
    clients: RwLock<HashMap<String, StaticEntry>>,
    changes: watch::Sender<u64>,
}

impl Default for StaticInstanceClients {
    fn default() -> Self {
        StaticInstanceClients {
            clients: RwLock::new(HashMap::new()),
            changes: watch::Sender::new(0),
        }
    }
}

impl std::fmt::Debug for StaticInstanceClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .clients
            .read()
            .map(|c| c.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_struct("StaticInstanceClients")
            .field("instances", &names)
            .finish()
    }
}

impl StaticInstanceClients {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn announce(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Adds or replaces the client of `instance`; a replaced instance counts as a new one.
    pub fn insert(&self, instance: impl Into<String>, client: kube::Client) {
        let generation = self.changes.borrow().wrapping_add(1);
        let instance = instance.into();
        let identity = InstanceIdentity {
            uid: format!("static:{instance}:{generation}"),
            credentials: String::new(),
        };
        self.clients
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(instance, StaticEntry { client, identity });
        // Also on a first insert: the counter keeps identities unique.
        self.announce();
    }

    /// Removes `instance`, as if it were deleted.
    pub fn remove(&self, instance: &str) {
        let removed = self
            .clients
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(instance)
            .is_some();
        if removed {
            self.announce();
        }
    }

    /// Builder form of [`StaticInstanceClients::insert`].
    pub fn with(self, instance: impl Into<String>, client: kube::Client) -> Self {
        self.insert(instance, client);
        self
    }
}

#[async_trait]
impl InstanceClients for StaticInstanceClients {
    async fn connect(&self, instance: &str) -> Result<InstanceConnection, RouterError> {
        self.clients
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(instance)
            .map(|e| InstanceConnection {
                client: e.client.clone(),
                identity: e.identity.clone(),
            })
            .ok_or_else(|| RouterError::UnknownInstance {
                instance: instance.to_owned(),
            })
    }

    fn current(&self, instance: &str) -> Option<InstanceIdentity> {
        self.clients
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(instance)
            .map(|e| e.identity.clone())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(uid: &str, credentials: &str) -> InstanceIdentity {
        InstanceIdentity {
            uid: uid.into(),
            credentials: credentials.into(),
        }
    }

    #[test]
    fn only_the_same_instance_and_credentials_still_serve() {
        let built = id("u1", "ns/s@1");
        for (current, want) in [
            (Some(id("u1", "ns/s@1")), true),
            (Some(id("u1", "ns/s@2")), false),
            (Some(id("u2", "ns/s@1")), false),
            (Some(id("u1", "ns/other@1")), false),
            (None, false),
        ] {
            assert_eq!(still_current(&built, current.as_ref()), want, "{current:?}");
        }
    }
}
