//! What the emulated Karmada controllers share: Karmada's `Cluster` resource and the loop that
//! runs a controller's pass on every change of a Cluster and every interval.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

/// Karmada's `cluster.karmada.io/v1alpha1` Cluster.
pub(crate) fn clusters() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    )
}

/// Runs `pass` on `karmada` until `shutdown`: once at start, then on every change of a
/// Cluster and every `interval`. A failing pass is logged (as `what`) and tried again.
pub(crate) async fn on_cluster_changes<F, Fut>(
    karmada: Client,
    interval: Duration,
    shutdown: CancellationToken,
    what: &'static str,
    pass: F,
) where
    F: Fn(Client) -> Fut,
    Fut: Future<Output = Result<(), kube::Error>>,
{
    let api: Api<DynamicObject> = Api::all_with(karmada.clone(), &clusters());
    let mut changes = watcher(api, watcher::Config::default()).boxed();
    loop {
        if let Err(err) = pass(karmada.clone()).await {
            tracing::debug!(error = %err, "{what}: cannot list clusters");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
            event = changes.next() => {
                if event.is_none() {
                    // The watch ended; keep the periodic passes.
                    changes = futures::stream::pending().boxed();
                }
            }
        }
    }
}
