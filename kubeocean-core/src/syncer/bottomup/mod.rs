//! The syncer's bottom-up half: the worker cluster's nodes become virtual nodes of the
//! computing cluster, sized and tainted by the leasing engine.
//!
//! Small reconcilers on the session's shared work queues ([`crate::syncer::context`]),
//! reading the in-memory indexes ([`crate::syncer::index`]):
//! - [`physical_node`]: create, update and gracefully remove virtual nodes;
//! - [`policy`]: validate ResourceLeasingPolicies and write their status, re-evaluating at
//!   the next window edge;
//! - [`lease`]: renew the virtual nodes' `kube-node-lease` Leases while the worker answers
//!   and the physical node is Ready;
//! - [`csinode`]: mirror physical CSINodes for their virtual nodes;
//! - [`hostport`]: hold the host ports of a physical node's own pods on its virtual node;
//! - [`reclaim`]: with `forceReclaim`, delete the virtual pods that do not tolerate the
//!   out-of-time-windows taint once the grace period has passed;
//! - [`virtual_pods`]: delete a virtual node's pods as a kubelet would (used by both).
//!
//! The decisions themselves are pure functions ([`vnode`], [`crate::syncer::metadata`], the
//! [`crate::leasing`] engine); reconcilers read the indexes, call them and write the
//! difference.

pub mod csinode;
pub mod hostport;
pub mod lease;
pub mod physical_node;
pub mod policy;
pub mod reclaim;
pub mod virtual_pods;
pub mod vnode;
