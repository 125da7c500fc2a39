//! Karmada's own behaviour for sandboxes and tests where no Karmada runs (feature
//! `karmada-sim`): the cluster-status controller, the aggregated cluster proxy, the
//! aggregated apiserver's Cluster strategy, what Karmada does with a member's execution
//! space (`execution_space`), and the propagation controllers (`propagation`: resource
//! detector, scheduler, binding, namespace sync, execution, work status and binding status
//! controllers, with the override manager and the default resource interpreter; the Events
//! they record, `events`), acting on
//! kube-sandbox clusters holding Karmada's resource types as Karmada would, so that what
//! Kairship creates behaves as it does in a real instance.

pub mod binding;
pub mod binding_status;
pub mod cluster_connection;
pub mod cluster_health;
mod cluster_passes;
pub mod cluster_proxy;
pub mod cluster_status;
pub mod cluster_strategy;
pub mod cluster_taints;
mod cluster_upgrade;
pub mod detector;
pub mod events;
pub mod execution;
pub mod execution_space;
pub mod informers;
pub mod interpreter;
pub mod karmada;
pub mod namespace_sync;
pub mod objects;
pub mod overrides;
pub mod propagation;
pub mod resource_models;
pub mod scheduler;
pub mod work_status;
