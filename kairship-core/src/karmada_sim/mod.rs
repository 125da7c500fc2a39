//! Karmada's own behaviour for sandboxes and tests where no Karmada runs (feature
//! `karmada-sim`): the cluster-status controller, the aggregated cluster proxy, the
//! aggregated apiserver's Cluster strategy and what Karmada does with a member's execution
//! space (`execution_space`), acting on
//! kube-sandbox clusters holding Karmada's resource types as Karmada would, so that what
//! Kairship creates behaves as it does in a real instance.

mod cluster_passes;
pub mod cluster_proxy;
pub mod cluster_status;
pub mod cluster_strategy;
pub mod execution_space;
