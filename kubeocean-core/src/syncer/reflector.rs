//! One watch per resource per cluster, turned into index changes. A re-list (on start and
//! after a watch expired) is delivered whole, so the index can drop what disappeared.

use std::fmt::Debug;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use kube_kit::slim::Slim;
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// A change seen by a watch.
pub enum Change<K> {
    /// An object was added or modified.
    Applied(K),
    /// An object was deleted.
    Deleted(K),
    /// The watch (re)listed: these are all the objects there are.
    Relisted(Vec<K>),
}

/// Watches `api` until `token` is cancelled, calling `handle` with every change and sending
/// on `synced` once the first list is complete. Objects are read without `managedFields`
/// ([`Slim`]): nothing here reads them, and they are the largest part of many objects.
/// Watch errors are logged and retried with backoff (the worker may be unreachable for a
/// while).
pub async fn reflect<K, F>(
    api: Api<Slim<K>>,
    config: watcher::Config,
    what: &'static str,
    synced: oneshot::Sender<()>,
    token: CancellationToken,
    handle: F,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash,
    F: FnMut(Change<K>) + Send,
{
    reflect_compact(api, config, what, synced, token, Slim::into_inner, handle).await;
}

/// [`reflect`], with every object turned into what the handler keeps of it (`compact`) as
/// soon as it arrives: a re-list then holds the compact forms until it is complete, not the
/// objects. `K` is the type the objects are decoded into (`Slim<Pod>`, or a type decoding
/// less, such as [`WirePod`](super::worker_pod::WirePod)).
pub async fn reflect_compact<K, T, C, F>(
    api: Api<K>,
    config: watcher::Config,
    what: &'static str,
    synced: oneshot::Sender<()>,
    token: CancellationToken,
    compact: C,
    mut handle: F,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash,
    T: Send,
    C: FnMut(K) -> T + Send,
    F: FnMut(Change<T>) + Send,
{
    let mut buffer: Vec<T> = Vec::new();
    reflect_streamed(
        api,
        config,
        what,
        synced,
        token,
        compact,
        move |change| match change {
            Streamed::Applied(obj) => handle(Change::Applied(obj)),
            Streamed::Deleted(obj) => handle(Change::Deleted(obj)),
            Streamed::ListStarted => buffer.clear(),
            Streamed::Listed(obj) => buffer.push(obj),
            Streamed::ListDone => handle(Change::Relisted(std::mem::take(&mut buffer))),
        },
    )
    .await;
}

/// A change seen by a watch, with a re-list handed on object by object.
pub enum Streamed<T> {
    /// An object was added or modified.
    Applied(T),
    /// An object was deleted.
    Deleted(T),
    /// The watch (re)lists: the objects follow as [`Streamed::Listed`].
    ListStarted,
    /// One object of the list in progress.
    Listed(T),
    /// The list is complete: the objects listed since [`Streamed::ListStarted`] are all the
    /// objects there are.
    ListDone,
}

/// [`reflect_compact`] without holding a re-list: each listed object goes to `handle` as it
/// arrives, so that a handler can build its state from them directly (the worker's pods:
/// hundreds of thousands of them in a large worker).
pub async fn reflect_streamed<K, T, C, F>(
    api: Api<K>,
    config: watcher::Config,
    what: &'static str,
    synced: oneshot::Sender<()>,
    token: CancellationToken,
    mut compact: C,
    mut handle: F,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash,
    T: Send,
    C: FnMut(K) -> T + Send,
    F: FnMut(Streamed<T>) + Send,
{
    let stream = watcher(api, config).default_backoff();
    futures::pin_mut!(stream);
    let mut synced = Some(synced);
    let mut failing = false;
    loop {
        let next = tokio::select! {
            _ = token.cancelled() => return,
            next = stream.next() => next,
        };
        match next {
            None => return,
            Some(Ok(event)) => {
                if failing {
                    tracing::info!(watch = what, "watch recovered");
                    failing = false;
                }
                match event {
                    watcher::Event::Apply(obj) => handle(Streamed::Applied(compact(obj))),
                    watcher::Event::Delete(obj) => handle(Streamed::Deleted(compact(obj))),
                    watcher::Event::Init => handle(Streamed::ListStarted),
                    watcher::Event::InitApply(obj) => handle(Streamed::Listed(compact(obj))),
                    watcher::Event::InitDone => {
                        handle(Streamed::ListDone);
                        if let Some(tx) = synced.take() {
                            // The receiver may have given up waiting; nothing to do then.
                            let _ = tx.send(());
                        }
                    }
                }
            }
            Some(Err(err)) => {
                // Logged once per outage, not once per retry.
                if !failing {
                    tracing::warn!(watch = what, error = %err, "watch failed; retrying");
                    failing = true;
                }
            }
        }
    }
}

/// Starts one watch feeding `handle`; its first complete list is reported on a channel
/// pushed to `synced`.
pub(crate) fn spawn_reflector<K, F>(
    tasks: &mut JoinSet<()>,
    synced: &mut Vec<oneshot::Receiver<()>>,
    api: Api<Slim<K>>,
    config: watcher::Config,
    what: &'static str,
    token: &CancellationToken,
    handle: F,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash,
    F: FnMut(Change<K>) + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    synced.push(rx);
    tasks.spawn(reflect(api, config, what, tx, token.clone(), handle));
}

/// [`spawn_reflector`] with [`reflect_streamed`]: `handle` sees what `compact` keeps of each
/// object, a re-list object by object.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spawn_streamed_reflector<K, T, C, F>(
    tasks: &mut JoinSet<()>,
    synced: &mut Vec<oneshot::Receiver<()>>,
    api: Api<K>,
    config: watcher::Config,
    what: &'static str,
    token: &CancellationToken,
    compact: C,
    handle: F,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Clone + Default + Eq + std::hash::Hash,
    T: Send + 'static,
    C: FnMut(K) -> T + Send + 'static,
    F: FnMut(Streamed<T>) + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    synced.push(rx);
    tasks.spawn(reflect_streamed(
        api,
        config,
        what,
        tx,
        token.clone(),
        compact,
        handle,
    ));
}
