//! Validation of ResourceLeasingPolicy specs beyond what the CRD schema enforces (and
//! again for objects that bypassed it).

use kube_kit::quantity::Quantity;

use super::selector::validate_selector;
use super::windows::Schedule;
use crate::crd::ResourceLeasingPolicy;

/// Checks a policy; `Err` holds one readable message per problem, each naming the field
/// (`spec.timeWindows[0].start "25:00" is not a time in HH:MM format ...`). Invalid
/// policies are not applied and are marked Failed.
pub fn validate_policy(policy: &ResourceLeasingPolicy) -> Result<(), Vec<String>> {
    check_policy(policy).map(|_| ())
}

/// [`validate_policy`], returning the parsed time windows when valid.
pub(crate) fn check_policy(policy: &ResourceLeasingPolicy) -> Result<Schedule, Vec<String>> {
    let spec = &policy.spec;
    let mut problems = Vec::new();
    if spec.cluster.is_empty() {
        problems.push("spec.cluster must name a ClusterBinding".to_owned());
    }
    let schedule = Schedule::parse(spec)
        .map_err(|found| problems.extend(found))
        .ok();
    for (i, limit) in spec.resource_limits.iter().enumerate() {
        let path = || format!("spec.resourceLimits[{i}]");
        if limit.resource.is_empty() {
            problems.push(format!("{}.resource must not be empty", path()));
        }
        if let Some(quantity) = &limit.quantity {
            match Quantity::parse(&quantity.0) {
                Ok(q) if q.is_negative() => problems.push(format!(
                    "{}.quantity {:?} must not be negative",
                    path(),
                    quantity.0
                )),
                Ok(_) => {}
                Err(err) => problems.push(format!("{}.quantity: {err}", path())),
            }
        }
        if let Some(percent) = limit.percent
            && !(0..=100).contains(&percent)
        {
            problems.push(format!("{}.percent {percent} is outside 0 to 100", path()));
        }
    }
    if let Some(seconds) = spec.graceful_reclaim_period_seconds
        && seconds < 0
    {
        problems.push(format!(
            "spec.gracefulReclaimPeriodSeconds {seconds} must not be negative"
        ));
    }
    if let Some(selector) = &spec.node_selector {
        problems.extend(validate_selector(selector, "spec.nodeSelector"));
    }
    match schedule {
        Some(schedule) if problems.is_empty() => Ok(schedule),
        _ => Err(problems),
    }
}
