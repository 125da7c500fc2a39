//! Taints of a virtual node.

use k8s_openapi::api::core::v1::{Node, Taint};

use crate::labels;

/// Effect that keeps new pods away.
pub const NO_SCHEDULE: &str = "NoSchedule";
/// Effect that also evicts running pods.
pub const NO_EXECUTE: &str = "NoExecute";

/// The taints of a virtual node: the physical node's taints (its
/// `node.kubernetes.io/unschedulable` renamed to `kubeocean.io/physical-node-unschedulable`,
/// its `kubeocean.io/out-of-time-windows` left out, as upstream does),
/// `kubeocean.io/vnode:NoSchedule` unless `disable_default_taint`, and when outside every
/// window `kubeocean.io/out-of-time-windows=true` with `NoExecute` if `force_reclaim` else
/// `NoSchedule`. A later taint replaces an earlier one with the same key and effect.
pub fn virtual_node_taints(
    node: &Node,
    disable_default_taint: bool,
    in_window: bool,
    force_reclaim: bool,
) -> Vec<Taint> {
    let mut taints: Vec<Taint> = Vec::new();
    let physical = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    // The window taint is the virtual node's own: a physical node's (another system's, or a
    // stale one) would evict from a virtual node that is inside its window.
    for taint in physical
        .iter()
        .filter(|t| t.key != labels::TAINT_OUT_OF_TIME_WINDOWS)
    {
        let mut copied = taint.clone();
        if copied.key == labels::TAINT_NODE_UNSCHEDULABLE {
            copied.key = labels::TAINT_PHYSICAL_NODE_UNSCHEDULABLE.to_owned();
        }
        push_unique(&mut taints, copied);
    }
    if !disable_default_taint {
        push_unique(&mut taints, taint(labels::TAINT_VNODE, None, NO_SCHEDULE));
    }
    if !in_window {
        let effect = if force_reclaim {
            NO_EXECUTE
        } else {
            NO_SCHEDULE
        };
        push_unique(
            &mut taints,
            taint(labels::TAINT_OUT_OF_TIME_WINDOWS, Some("true"), effect),
        );
    }
    taints
}

/// A taint without a time.
pub fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
    Taint {
        key: key.to_owned(),
        value: value.map(str::to_owned),
        effect: effect.to_owned(),
        time_added: None,
    }
}

fn push_unique(taints: &mut Vec<Taint>, new: Taint) {
    taints.retain(|t| !(t.key == new.key && t.effect == new.effect));
    taints.push(new);
}
