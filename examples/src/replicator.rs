//! A kube-rs controller written to be tested against kube-sandbox: the ConfigMap replicator.
//!
//! Every ConfigMap in the source namespace labelled `replicate.example.com/all=true` is copied
//! into every other namespace (system namespaces and terminating ones aside). Copies carry
//! `replicate.example.com/from=<source namespace>.<name>` and are written with server-side
//! apply; a namespace created later gets them too; changing the source changes every copy;
//! deleting the source deletes the copies (the source holds a finalizer until they are gone).
//!
//! What to copy into your own project: the decisions are plain functions
//! ([`target_namespaces`], [`desired_copy`], [`stale_copies`]) with unit tests beside them, the
//! reconciler only reads, calls them and writes, and `examples/tests/replicator.rs` runs
//! [`run`] against an in-process kube-sandbox cluster (`kube-sandbox` as a dev-dependency with
//! the `testing` feature), waiting for conditions with bounded polling.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use kube::runtime::{Controller, WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tokio_util::sync::CancellationToken;

/// Label that marks a source ConfigMap.
pub const SOURCE_LABEL: &str = "replicate.example.com/all";
/// Label on every copy: `<source namespace>.<source name>`.
pub const FROM_LABEL: &str = "replicate.example.com/from";
/// Finalizer a source holds until its copies are deleted.
pub const FINALIZER: &str = "replicate.example.com/copies";
/// Field manager of the copies' server-side apply.
pub const FIELD_MANAGER: &str = "configmap-replicator";
/// Namespaces that never receive copies.
pub const SYSTEM_NAMESPACES: [&str; 3] = ["kube-system", "kube-public", "kube-node-lease"];

/// What a reconcile could not do.
#[derive(Debug, thiserror::Error)]
pub enum ReplicateError {
    /// A call to the API server failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The finalizer helper failed (its inner error says why).
    #[error("finalizer: {0}")]
    Finalizer(#[source] Box<kube::runtime::finalizer::Error<ReplicateError>>),
}

fn kube_error(what: impl Into<String>) -> impl FnOnce(kube::Error) -> ReplicateError {
    let what = what.into();
    move |source| ReplicateError::Kube { what, source }
}

/// The value of [`FROM_LABEL`] for a source.
pub fn from_value(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}")
}

/// Namespaces that should hold copies: every namespace but the source's, the system ones and
/// those being deleted.
pub fn target_namespaces(namespaces: &[Namespace], source_namespace: &str) -> Vec<String> {
    namespaces
        .iter()
        .filter(|ns| ns.metadata.deletion_timestamp.is_none())
        .map(ResourceExt::name_any)
        .filter(|name| name != source_namespace && !SYSTEM_NAMESPACES.contains(&name.as_str()))
        .collect()
}

/// The copy of `source` in `namespace`: its data and binary data, and the [`FROM_LABEL`].
pub fn desired_copy(source: &ConfigMap, namespace: &str) -> ConfigMap {
    let from = from_value(
        source.metadata.namespace.as_deref().unwrap_or_default(),
        &source.name_any(),
    );
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(source.name_any()),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([(FROM_LABEL.to_owned(), from)])),
            ..ObjectMeta::default()
        },
        data: source.data.clone(),
        binary_data: source.binary_data.clone(),
        ..ConfigMap::default()
    }
}

/// The `(namespace, name)` of copies that no longer belong: in a namespace that is not a
/// target any more.
pub fn stale_copies(copies: &[ConfigMap], targets: &[String]) -> Vec<(String, String)> {
    copies
        .iter()
        .filter_map(|copy| Some((copy.metadata.namespace.clone()?, copy.name_any())))
        .filter(|(namespace, _)| !targets.contains(namespace))
        .collect()
}

/// What the reconciler shares.
pub struct Context {
    /// The client it reads and writes with.
    pub client: Client,
}

async fn copies_of(client: &Client, source: &ConfigMap) -> Result<Vec<ConfigMap>, ReplicateError> {
    let from = from_value(
        source.metadata.namespace.as_deref().unwrap_or_default(),
        &source.name_any(),
    );
    let selector = ListParams::default().labels(&format!("{FROM_LABEL}={from}"));
    Api::<ConfigMap>::all(client.clone())
        .list(&selector)
        .await
        .map(|list| list.items)
        .map_err(kube_error(format!("listing the copies of {from}")))
}

async fn delete_copy(client: &Client, namespace: &str, name: &str) -> Result<(), ReplicateError> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(kube_error(format!("deleting {namespace}/{name}"))(source)),
    }
}

/// Brings every target namespace's copy in step with `source` and deletes stale copies.
async fn apply(source: &ConfigMap, client: &Client) -> Result<Action, ReplicateError> {
    let source_namespace = source.metadata.namespace.clone().unwrap_or_default();
    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(kube_error("listing namespaces"))?;
    let targets = target_namespaces(&namespaces.items, &source_namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for namespace in &targets {
        let copy = desired_copy(source, namespace);
        Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .patch(&source.name_any(), &params, &Patch::Apply(&copy))
            .await
            .map_err(kube_error(format!(
                "applying {namespace}/{}",
                source.name_any()
            )))?;
    }
    for (namespace, name) in stale_copies(&copies_of(client, source).await?, &targets) {
        delete_copy(client, &namespace, &name).await?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Deletes every copy of `source`, so that its finalizer can go.
async fn cleanup(source: &ConfigMap, client: &Client) -> Result<Action, ReplicateError> {
    for copy in copies_of(client, source).await? {
        let namespace = copy.metadata.namespace.clone().unwrap_or_default();
        delete_copy(client, &namespace, &copy.name_any()).await?;
    }
    Ok(Action::await_change())
}

/// One reconcile of a source ConfigMap.
pub async fn reconcile(
    source: Arc<ConfigMap>,
    ctx: Arc<Context>,
) -> Result<Action, ReplicateError> {
    let namespace = source.metadata.namespace.clone().unwrap_or_default();
    let api = Api::<ConfigMap>::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, source, |event| async move {
        match event {
            Event::Apply(source) => apply(&source, &ctx.client).await,
            Event::Cleanup(source) => cleanup(&source, &ctx.client).await,
        }
    })
    .await
    .map_err(|e| ReplicateError::Finalizer(Box::new(e)))
}

fn error_policy(_: Arc<ConfigMap>, error: &ReplicateError, _: Arc<Context>) -> Action {
    tracing::warn!(%error, "reconcile failed; retrying");
    Action::requeue(Duration::from_secs(1))
}

/// Runs the replicator for the sources in `source_namespace` until `stop` is cancelled. Every
/// namespace change reconciles every source, so new namespaces get their copies.
pub async fn run(client: Client, source_namespace: &str, stop: CancellationToken) {
    let sources = Api::<ConfigMap>::namespaced(client.clone(), source_namespace);
    // Namespace changes, coalesced: a full channel already holds a pending "reconcile all".
    let (mut trigger, namespace_changes) = futures::channel::mpsc::channel::<()>(1);
    let namespaces = watcher(
        Api::<Namespace>::all(client.clone()),
        watcher::Config::default(),
    )
    .touched_objects();
    let watching = stop.clone();
    tokio::spawn(async move {
        let mut namespaces = std::pin::pin!(namespaces);
        loop {
            tokio::select! {
                () = watching.cancelled() => break,
                change = namespaces.next() => match change {
                    Some(Ok(_)) => { let _ = trigger.try_send(()); }
                    Some(Err(error)) => tracing::debug!(%error, "namespace watch"),
                    None => break,
                },
            }
        }
    });
    let context = Arc::new(Context { client });
    Controller::new(
        sources,
        watcher::Config::default().labels(&format!("{SOURCE_LABEL}=true")),
    )
    .reconcile_all_on(namespace_changes)
    .graceful_shutdown_on(async move { stop.cancelled().await })
    .run(reconcile, error_policy, context)
    .for_each(|result| async move {
        if let Err(error) = result {
            tracing::debug!(%error, "reconcile error");
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn namespace(name: &str, deleting: bool) -> Namespace {
        let mut ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        if deleting {
            ns.metadata.deletion_timestamp =
                serde_json::from_value(json!("2026-01-01T00:00:00Z")).unwrap();
        }
        ns
    }

    #[test]
    fn targets_leave_out_the_source_system_and_terminating_namespaces() {
        let all = [
            namespace("shared", false),
            namespace("team-a", false),
            namespace("kube-system", false),
            namespace("old", true),
            namespace("team-b", false),
        ];
        assert_eq!(target_namespaces(&all, "shared"), ["team-a", "team-b"]);
    }

    #[test]
    fn a_copy_keeps_the_data_and_names_its_source() {
        let source: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "ca", "namespace": "shared", "uid": "u1",
                         "labels": {SOURCE_LABEL: "true"}, "finalizers": [FINALIZER]},
            "data": {"ca.crt": "PEM"}
        }))
        .unwrap();
        let copy = desired_copy(&source, "team-a");
        assert_eq!(copy.metadata.namespace.as_deref(), Some("team-a"));
        assert_eq!(copy.metadata.name.as_deref(), Some("ca"));
        assert_eq!(copy.data, source.data);
        // Neither the source label (a copy is no source) nor the finalizer nor the UID.
        assert_eq!(
            copy.metadata.labels,
            Some(BTreeMap::from([(
                FROM_LABEL.to_owned(),
                "shared.ca".to_owned()
            )]))
        );
        assert!(copy.metadata.finalizers.is_none() && copy.metadata.uid.is_none());
    }

    #[test]
    fn copies_outside_the_targets_are_stale() {
        let copy = |ns: &str| -> ConfigMap {
            serde_json::from_value(json!({"metadata": {"name": "ca", "namespace": ns}})).unwrap()
        };
        let targets = vec!["team-a".to_owned()];
        assert_eq!(
            stale_copies(&[copy("team-a"), copy("gone")], &targets),
            [("gone".to_owned(), "ca".to_owned())]
        );
    }
}
