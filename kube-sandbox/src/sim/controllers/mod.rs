//! Workload controllers, as kube-controller-manager runs them: Deployment -> ReplicaSet -> Pods,
//! StatefulSet, DaemonSet, Job, CronJob, the EndpointSlice and Endpoints controllers of
//! Services, the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap of each
//! namespace and the tokens of
//! service-account token Secrets; and, always on (`csr_signing.rs`), the signing of approved
//! client CSRs. Off unless [`crate::ClusterOptions::workload_controllers`] is set.
//!
//! Each controller is level-triggered: a pass reads the current objects from the store and
//! writes what differs (writes that change nothing are not made). A pass runs whenever one of
//! the resources they read changes, and every second (for time-based rules: CronJob
//! schedules, `minReadySeconds`). Every object they create carries a controller owner
//! reference, so the garbage collector removes it with its owner.

pub use crate::validation::cron;
pub mod cronjob;
pub mod csr_signing;
pub mod daemonset;
pub mod deployment;
pub mod endpoints;
pub mod endpointslice;
pub mod job;
pub mod objects;
pub mod pod_template_hash;
pub mod replicaset;
pub mod rollout;
pub mod root_ca;
pub mod serviceaccount;
pub mod statefulset;
pub mod token;

use super::Simulator;
use crate::apiserver::resources::GroupResource;
use crate::apiserver::state::ClusterState;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The resources whose changes start a pass.
const WATCHED: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "nodes"),
    ("", "services"),
    ("", "namespaces"),
    ("", "serviceaccounts"),
    ("", "secrets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
];

/// One pass of every controller: the cluster and the controllers' clock.
pub struct Pass<'a> {
    /// The cluster.
    pub state: &'a ClusterState,
    /// "Now" for time-based rules (the wall clock plus [`Simulator::advance_clock`]).
    pub now: jiff::Timestamp,
}

impl Pass<'_> {
    /// Every object of a resource.
    pub fn list(&self, group: &str, plural: &str) -> Vec<Value> {
        objects::list(self.state, group, plural)
    }

    /// The pods of one namespace.
    pub fn pods_in(&self, namespace: &str) -> Vec<Value> {
        self.state
            .store
            .list(
                &GroupResource::new("", "pods"),
                Some(namespace),
                None,
                0,
                &|_| true,
            )
            .items
            .into_iter()
            .map(|s| s.value.clone())
            .collect()
    }
}

/// Runs one pass of every controller.
pub fn run_pass(pass: &Pass) {
    replicaset::sync_all(pass);
    deployment::sync_all(pass);
    statefulset::sync_all(pass);
    daemonset::sync_all(pass);
    job::sync_all(pass);
    cronjob::sync_all(pass);
    endpointslice::sync_all(pass);
    endpoints::sync_all(pass);
    serviceaccount::sync_all(pass);
    root_ca::sync_all(pass);
    token::sync_all(pass);
}

/// Runs the workload controllers of a cluster until it shuts down.
pub async fn run(sim: Arc<Simulator>) {
    let state = &sim.state;
    let mut changes: Vec<_> = WATCHED
        .iter()
        .map(|(g, r)| state.store.subscribe_resource(&GroupResource::new(g, r)))
        .collect();
    loop {
        run_pass(&Pass {
            state,
            now: sim.controller_now(),
        });
        let any_change = futures::future::select_all(
            changes
                .iter_mut()
                .map(|c| Box::pin(c.changed()))
                .collect::<Vec<_>>(),
        );
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = any_change => {
                // Let a burst of writes (a kubectl apply, a scale) land before the next pass.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}
