//! Which policy, if any, applies to a physical node.

use k8s_openapi::api::core::v1::Node;

use super::selector;
use super::validate::check_policy;
use super::windows::Schedule;
use crate::crd::ResourceLeasingPolicy;
use crate::labels;

/// The policy applied to a node, with its parsed time windows.
#[derive(Clone, Debug)]
pub struct SelectedPolicy<'p> {
    /// The policy.
    pub policy: &'p ResourceLeasingPolicy,
    /// Its time windows.
    pub schedule: Schedule,
}

/// Whether a node is itself virtual (label `type=virtual-kubelet`, or an instance type
/// `external`, `vnode` or `eklet`); such nodes are never lent.
pub fn is_virtual_node(node: &Node) -> bool {
    let Some(node_labels) = node.metadata.labels.as_ref() else {
        return false;
    };
    let label_is = |key: &str, accepted: &[&str]| {
        node_labels
            .get(key)
            .is_some_and(|v| accepted.contains(&v.as_str()))
    };
    label_is(labels::NODE_TYPE, &[labels::NODE_TYPE_VIRTUAL_KUBELET])
        || label_is(labels::INSTANCE_TYPE, &labels::VIRTUAL_INSTANCE_TYPES)
        || label_is(labels::INSTANCE_TYPE_BETA, &labels::VIRTUAL_INSTANCE_TYPES)
}

/// The policy for `node` among `policies`: those naming `binding_name` as their cluster,
/// not being deleted, whose selector matches the node, and valid; the oldest
/// `creationTimestamp` wins (a policy without one counts as oldest), ties broken by name.
/// The binding's own selector is checked by the caller.
pub fn select_policy<'p>(
    binding_name: &str,
    node: &Node,
    policies: &[&'p ResourceLeasingPolicy],
) -> Option<SelectedPolicy<'p>> {
    let mut candidates: Vec<&'p ResourceLeasingPolicy> = policies
        .iter()
        .copied()
        .filter(|p| {
            p.spec.cluster == binding_name
                && p.metadata.deletion_timestamp.is_none()
                && selector::node_matches(p.spec.node_selector.as_ref(), node)
        })
        .collect();
    candidates.sort_by(|a, b| {
        (&a.metadata.creation_timestamp, &a.metadata.name)
            .cmp(&(&b.metadata.creation_timestamp, &b.metadata.name))
    });
    // Validate lazily: usually the first candidate is valid and the rest are never parsed.
    candidates.into_iter().find_map(|policy| {
        check_policy(policy)
            .ok()
            .map(|schedule| SelectedPolicy { policy, schedule })
    })
}
