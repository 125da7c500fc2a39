//! From what a node offers, its own usage and the policy's caps to what is lent.

use std::collections::BTreeMap;

use kube_kit::quantity::Quantity;

use super::usage::{PODS, ResourceAmounts};
use crate::crd::ResourceLimit;

/// `max(0, base - usage)` per resource of `base`.
pub fn remaining(
    base: BTreeMap<String, Quantity>,
    usage: &ResourceAmounts<'_>,
) -> BTreeMap<String, Quantity> {
    let mut remaining = base;
    for (name, used) in usage.iter() {
        if let Some(left) = remaining.get_mut(name) {
            *left = (*left - used).clamp_non_negative();
        }
    }
    remaining
}

/// Applies the policy's limits: for each limit on a resource present in `remaining`, the
/// smallest of its candidates (`quantity` if set and non-zero, `percent`% of the remaining
/// amount if percent > 0) replaces the amount when smaller. Limits that cannot be read
/// are skipped (policies are validated before they are applied).
pub fn apply_limits(remaining: &mut BTreeMap<String, Quantity>, limits: &[ResourceLimit]) {
    for limit in limits {
        let Some(amount) = remaining.get_mut(&limit.resource) else {
            continue;
        };
        let mut capped = *amount;
        if let Some(quantity) = limit
            .quantity
            .as_ref()
            .and_then(|q| Quantity::parse(&q.0).ok())
            && !quantity.is_zero()
        {
            capped = capped.min(quantity);
        }
        if let Some(percent) = limit
            .percent
            .and_then(|p| u32::try_from(p).ok())
            .filter(|p| *p > 0)
        {
            capped = capped.min(amount.percent(percent.min(100)));
        }
        *amount = capped;
    }
}

/// Rounds down the resources that only come in whole units (see [`is_whole_unit_resource`]).
pub fn round_whole_units(amounts: &mut BTreeMap<String, Quantity>) {
    for (name, amount) in amounts.iter_mut() {
        if is_whole_unit_resource(name) {
            *amount = amount.floor_units();
        }
    }
}

/// Resources that exist only in whole units: `pods`, extended resources (a domain-prefixed
/// name outside `kubernetes.io`, such as `nvidia.com/gpu`), and byte amounts (`memory`,
/// `ephemeral-storage`, `storage`, `hugepages-*`).
pub fn is_whole_unit_resource(name: &str) -> bool {
    name == PODS || is_extended_resource(name) || is_byte_resource(name)
}

/// Kubernetes' extended resources: a `/` in the name, not in the `kubernetes.io` domain and
/// not a quota `requests.` name.
pub fn is_extended_resource(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Resources measured in bytes.
pub fn is_byte_resource(name: &str) -> bool {
    matches!(name, "memory" | "ephemeral-storage" | "storage") || name.starts_with("hugepages-")
}
