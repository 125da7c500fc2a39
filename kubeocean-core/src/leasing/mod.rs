//! The leasing engine: from a physical node, its pods, the policies and a clock to the
//! virtual node that represents it (allocatable, taints) and when that answer can change.
//!
//! [`DefaultLeasingEngine`] composes small pure functions, each usable on its own:
//! [`select_policy`] (which policy), [`Schedule`] (time windows), [`node_usage`] (what the
//! node's own pods request), [`remaining`] / [`apply_limits`] / [`round_whole_units`] (what
//! is lent) and [`virtual_node_taints`]. Plug in another [`LeasingPolicyEngine`] to lend
//! differently.

pub mod host_ports;
mod limits;
mod selection;
mod selector;
mod taints;
mod usage;
mod validate;
mod windows;

use std::collections::BTreeMap;
use std::fmt;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube_kit::quantity::Quantity;

use crate::crd::{ClusterBinding, ResourceLeasingPolicy};
use crate::naming::virtual_node_name;

pub use limits::{
    apply_limits, is_byte_resource, is_extended_resource, is_whole_unit_resource, remaining,
    round_whole_units,
};
pub use selection::{SelectedPolicy, is_virtual_node, select_policy};
pub use selector::{
    FIELD_METADATA_NAME, label_requirement_matches, node_matches, term_matches, validate_selector,
};
pub use taints::{NO_EXECUTE, NO_SCHEDULE, taint, virtual_node_taints};
pub use usage::{
    NodeUsage, PODS, PodUsage, ResourceAmounts, default_requests_from_limits, node_base,
    node_usage, pod_counts, pod_requests,
};
pub use validate::validate_policy;
pub use windows::{Schedule, WindowState, parse_time_of_day, parse_timezone, parse_weekday};

/// Everything the engine looks at for one physical node.
#[derive(Clone, Debug)]
pub struct LeasingInput<'a> {
    /// The physical node.
    pub node: &'a Node,
    /// The pods bound to that node (all phases; the engine filters). The syncer passes none
    /// and gives [`LeasingInput::usage`] instead; engines should prefer `usage` when set.
    pub pods: Vec<&'a Pod>,
    /// The node's usage precomputed from cached per-pod requests (the syncer keeps them per
    /// pod version); `None`: computed from [`LeasingInput::pods`].
    pub usage: Option<&'a NodeUsage>,
    /// Candidate policies of the worker cluster (the engine selects).
    pub policies: Vec<&'a ResourceLeasingPolicy>,
    /// The binding the node would be lent to.
    pub binding: &'a ClusterBinding,
    /// The current time.
    pub now: Timestamp,
}

/// Why a node is not lent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotLentReason {
    /// The node is itself a virtual node.
    VirtualNode,
    /// The binding's node selector does not select the node.
    NotSelectedByBinding,
    /// No valid policy of this binding selects the node.
    NoPolicy,
    /// The physical node no longer exists.
    NodeGone,
    /// The binding no longer exists or is being deleted.
    BindingGone,
    /// The engine's own rules leave nothing to lend (custom engines).
    NothingToLend,
}

impl fmt::Display for NotLentReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotLentReason::VirtualNode => "the node is itself a virtual node",
            NotLentReason::NotSelectedByBinding => {
                "the binding's node selector does not select the node"
            }
            NotLentReason::NoPolicy => "no valid policy of the binding selects the node",
            NotLentReason::NodeGone => "the physical node no longer exists",
            NotLentReason::BindingGone => "the binding no longer exists or is being deleted",
            NotLentReason::NothingToLend => "the engine's rules leave nothing to lend",
        })
    }
}

/// What the engine decided for one physical node.
#[derive(Clone, Debug, PartialEq)]
pub struct LeasingDecision {
    /// Name of the virtual node for this physical node.
    pub virtual_node_name: String,
    /// Name of the applied policy (`None` when not lent).
    pub policy: Option<String>,
    /// Inside one of the applied policy's time windows.
    pub in_window: bool,
    /// Capacity and allocatable of the virtual node.
    pub allocatable: BTreeMap<String, Quantity>,
    /// Taints of the virtual node.
    pub taints: Vec<Taint>,
    /// Whether the node is lent at all; when false its virtual node is removed.
    pub lent: bool,
    /// Why the node is not lent (`None` when lent).
    pub not_lent_reason: Option<NotLentReason>,
    /// The next window edge at which the decision can change (re-evaluate then).
    pub next_change: Option<Timestamp>,
}

impl LeasingDecision {
    /// A decision not to lend the node.
    pub fn not_lent(virtual_node_name: String, reason: NotLentReason) -> LeasingDecision {
        LeasingDecision {
            virtual_node_name,
            policy: None,
            in_window: false,
            allocatable: BTreeMap::new(),
            taints: Vec::new(),
            lent: false,
            not_lent_reason: Some(reason),
            next_change: None,
        }
    }

    /// `allocatable` in the form a Node status takes.
    pub fn allocatable_for_node(&self) -> BTreeMap<String, K8sQuantity> {
        self.allocatable
            .iter()
            .map(|(name, q)| (name.clone(), K8sQuantity::from(q)))
            .collect()
    }
}

/// Decides what a physical node lends. Implementations must be pure: the same input gives
/// the same decision, with time coming only from [`LeasingInput::now`].
pub trait LeasingPolicyEngine: Send + Sync {
    /// Evaluates one physical node.
    fn evaluate(&self, input: &LeasingInput<'_>) -> LeasingDecision;
}

/// Kubeocean's leasing rules (see the module documentation and the design's "Leasing math").
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultLeasingEngine;

impl LeasingPolicyEngine for DefaultLeasingEngine {
    fn evaluate(&self, input: &LeasingInput<'_>) -> LeasingDecision {
        let binding = input.binding;
        let node_name = input.node.metadata.name.as_deref().unwrap_or_default();
        let vnode = virtual_node_name(&binding.spec.cluster_id, node_name);
        if binding.metadata.deletion_timestamp.is_some() {
            // The syncer drains every virtual node of a binding being deleted.
            return LeasingDecision::not_lent(vnode, NotLentReason::BindingGone);
        }
        if is_virtual_node(input.node) {
            return LeasingDecision::not_lent(vnode, NotLentReason::VirtualNode);
        }
        if !node_matches(binding.spec.node_selector.as_ref(), input.node) {
            return LeasingDecision::not_lent(vnode, NotLentReason::NotSelectedByBinding);
        }
        let binding_name = binding.metadata.name.as_deref().unwrap_or_default();
        let Some(selected) = select_policy(binding_name, input.node, &input.policies) else {
            return LeasingDecision::not_lent(vnode, NotLentReason::NoPolicy);
        };
        let window = selected.schedule.state(input.now);

        let usage = match input.usage {
            Some(usage) => usage.amounts(),
            None => node_usage(&input.pods),
        };
        let mut allocatable = remaining(node_base(input.node), &usage);
        apply_limits(&mut allocatable, &selected.policy.spec.resource_limits);
        round_whole_units(&mut allocatable);

        let taints = virtual_node_taints(
            input.node,
            binding.spec.disable_node_default_taint,
            window.in_window,
            selected.policy.spec.force_reclaim,
        );
        LeasingDecision {
            virtual_node_name: vnode,
            policy: selected.policy.metadata.name.clone(),
            in_window: window.in_window,
            allocatable,
            taints,
            lent: true,
            not_lent_reason: None,
            next_change: window.next_change,
        }
    }
}

#[cfg(test)]
mod tests;
