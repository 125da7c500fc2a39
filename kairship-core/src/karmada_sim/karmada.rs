//! What every propagation controller of the emulated Karmada reads: a client of the Karmada
//! API server and the shared informers.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::cluster_passes::clusters;
use super::events::EventRecorder;
use super::informers::{Informer, Members, Memo};
use super::objects::*;

/// What every propagation controller reads: a client of the Karmada API server and the
/// shared informers.
pub struct Karmada {
    /// Client of the Karmada API server.
    pub client: kube::Client,
    /// Clusters.
    pub clusters: Informer,
    /// PropagationPolicies.
    pub pps: Informer,
    /// ClusterPropagationPolicies.
    pub cpps: Informer,
    /// OverridePolicies.
    pub ops: Informer,
    /// ClusterOverridePolicies.
    pub cops: Informer,
    /// ResourceBindings.
    pub rbs: Informer,
    /// ClusterResourceBindings.
    pub crbs: Informer,
    /// Works.
    pub works: Informer,
    /// Namespaces.
    pub namespaces: Informer,
    /// Resource templates, per kind.
    pub templates: Vec<(&'static TemplateKind, Informer)>,
    /// Member connections and informers.
    pub members: Members,
    /// What each controller already did.
    pub memo: Memo,
    /// The Events the controllers record.
    pub events: EventRecorder,
    /// Stops everything.
    pub shutdown: CancellationToken,
}

impl Karmada {
    pub(super) fn start(client: kube::Client, shutdown: CancellationToken) -> Arc<Karmada> {
        let i = |r| Informer::start(&client, r, None, &shutdown);
        Arc::new(Karmada {
            clusters: i(clusters()),
            pps: i(propagation_policies()),
            cpps: i(cluster_propagation_policies()),
            ops: i(override_policies()),
            cops: i(cluster_override_policies()),
            rbs: i(resource_bindings()),
            crbs: i(cluster_resource_bindings()),
            works: i(works()),
            namespaces: i(namespaces()),
            templates: TEMPLATE_KINDS
                .iter()
                .map(|k| (k, i(k.resource())))
                .collect(),
            members: Members::default(),
            memo: Memo::default(),
            events: EventRecorder::start(client.clone(), shutdown.clone()),
            client,
            shutdown,
        })
    }

    /// Waits (a bounded time) for the informers every controller needs: a controller must not
    /// act on an empty view of what exists.
    pub(super) async fn ready(&self) {
        let limit = Duration::from_secs(10);
        for i in [
            &self.clusters,
            &self.pps,
            &self.ops,
            &self.rbs,
            &self.works,
            &self.namespaces,
        ] {
            if !i.ready(limit).await {
                tracing::debug!(resource = %i.resource().plural, "informer not ready");
            }
        }
    }
}
