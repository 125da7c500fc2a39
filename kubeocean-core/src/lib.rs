//! Kubeocean as a library: pool the nodes of worker clusters into a computing cluster as
//! virtual nodes.
//!
//! - [`crd`]: the `ClusterBinding` and `ResourceLeasingPolicy` custom resources.
//! - [`naming`] and [`labels`]: the names, labels, annotations and taints of the wire contract.
//! - [`leasing`]: what a physical node lends, when, and with which taints.
//! - [`syncer`]: one syncer per ClusterBinding; its bottom-up half
//!   ([`syncer::bottomup`]: virtual nodes, their Leases and CSINodes) and top-down half
//!   ([`syncer::topdown`]: virtual pods, their ConfigMaps, Secrets, claims and tokens ->
//!   physical objects in the worker, status back up) share its session core.
//! - [`explain`]: the `kubeocean leasing explain` dry-run.
//! - [`bind`]: `kubeocean bind` / `unbind`: a worker bound (and unbound) in one command.
//! - [`upgrade`]: taking over objects left by upstream Kubeocean (finalizers, `clusterID` owner).

// Tests unwrap their fixtures; library code never does.
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod bind;
pub mod crd;
pub mod explain;
pub mod labels;
pub mod leasing;
pub mod manager;
pub mod naming;
pub mod proxier;
pub mod setup;
pub mod syncer;
pub mod upgrade;

pub use crd::crds;
