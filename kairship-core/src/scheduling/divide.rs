//! Selecting clusters under spread constraints and dividing replicas among them.

use std::collections::BTreeMap;

use kube_kit::quantity::Quantity;

use super::{
    AGGREGATED, DIVIDED, DUPLICATED, Placement, TargetCluster, WEIGHTED, Workload, affinity_matches,
};
use crate::models::cluster::Cluster;

/// A feasible cluster and what it can still hold.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    pub name: String,
    pub cluster: Cluster,
    /// Replicas the cluster can still take (the estimator's answer).
    pub allocatable: i32,
    /// `allocatable` plus what the binding already placed there.
    pub available: i64,
}

/// The clusters kept by the spread constraints, and the names of those dropped.
pub(super) struct Selected {
    pub chosen: Vec<Candidate>,
    pub dropped: Vec<String>,
}

fn quantity(
    map: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    key: &str,
) -> Quantity {
    map.get(key)
        .and_then(|q| Quantity::parse(q.0.trim()).ok())
        .unwrap_or_default()
}

/// How many more replicas requesting `request` each the cluster can hold, from its
/// `resourceSummary` (the general estimator, `pkg/estimator/client/general.go`
/// `getMaximumReplicasBasedOnClusterSummary`): free pods, then each requested resource's
/// allocatable minus allocated minus allocating, divided by the request. No summary: 0.
pub fn available_replicas(cluster: &Cluster, request: &BTreeMap<String, String>) -> i32 {
    let Some(summary) = cluster
        .status
        .as_ref()
        .and_then(|s| s.resource_summary.as_ref())
    else {
        return 0;
    };
    let free = |key: &str| {
        quantity(&summary.allocatable, key)
            - quantity(&summary.allocated, key)
            - quantity(&summary.allocating, key)
    };
    let mut most = free("pods").value();
    if most <= 0 {
        return 0;
    }
    for (key, wanted) in request {
        let Ok(wanted) = Quantity::parse(wanted.trim()) else {
            continue;
        };
        if wanted.is_zero() || key == "pods" {
            continue;
        }
        let left = free(key);
        // CPU is compared in millicores, everything else in units.
        let n = if key == "cpu" {
            left.milli_value() / wanted.milli_value().max(1)
        } else {
            left.value() / wanted.value().max(1)
        };
        most = most.min(n.max(0));
    }
    i32::try_from(most).unwrap_or(i32::MAX)
}

/// The Webster (Sainte-Laguë) division of `seats` among parties with `votes`, starting from
/// `initial` seats (`pkg/util/helper/webstermethod.go` `AllocateWebsterSeats`, with
/// `binding.go` `tieBreakerByUID`). Every party comes back, in name order.
pub fn webster(
    seats: i32,
    votes: &[(String, i64)],
    initial: &[TargetCluster],
    uid: &str,
) -> Vec<TargetCluster> {
    let mut parties: BTreeMap<String, (i64, i32)> = BTreeMap::new();
    for t in initial {
        parties.insert(t.name.clone(), (0, t.replicas));
    }
    for (name, v) in votes {
        parties.entry(name.clone()).or_insert((0, 0)).0 = *v;
    }
    if parties.is_empty() {
        return Vec::new();
    }
    // An odd FNV-1a hash of the uid prefers larger names on ties, an even one smaller names.
    let names_descending = !uid.is_empty() && fnv32a(uid.as_bytes()) & 1 == 1;
    let mut list: Vec<(String, i64, i32)> =
        parties.into_iter().map(|(n, (v, s))| (n, v, s)).collect();
    for _ in 0..seats.max(0) {
        let mut best = 0;
        for i in 1..list.len() {
            if first_before(&list[i], &list[best], names_descending) {
                best = i;
            }
        }
        list[best].2 += 1;
    }
    list.into_iter()
        .map(|(name, _, replicas)| TargetCluster { name, replicas })
        .collect()
}

/// Whether party `a` gets the next seat before `b`.
fn first_before(a: &(String, i64, i32), b: &(String, i64, i32), names_descending: bool) -> bool {
    let pa = a.1 as f64 / f64::from(2 * a.2 + 1);
    let pb = b.1 as f64 / f64::from(2 * b.2 + 1);
    if pa != pb {
        return pa > pb;
    }
    if a.2 != b.2 {
        return a.2 < b.2;
    }
    if names_descending {
        a.0 > b.0
    } else {
        a.0 < b.0
    }
}

fn fnv32a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

fn division_preference(placement: &Placement) -> &str {
    placement
        .replica_scheduling
        .as_ref()
        .and_then(|r| r.replica_division_preference.as_deref())
        .unwrap_or(WEIGHTED)
}

fn dynamic_weight(placement: &Placement) -> bool {
    placement
        .replica_scheduling
        .as_ref()
        .and_then(|r| r.weight_preference.as_ref())
        .and_then(|w| w.dynamic_weight.as_deref())
        .is_some_and(|d| !d.is_empty())
}

/// Whether replicas are divided by what each cluster can hold (`Aggregated`, or `Weighted`
/// with a dynamic weight) rather than by static weights.
pub(super) fn is_dynamic(placement: &Placement) -> bool {
    placement.scheduling_type() == DIVIDED
        && (division_preference(placement) == AGGREGATED || dynamic_weight(placement))
}

/// `spreadconstraint.SelectBestClusters`: spread constraints by cluster or region choose
/// among the candidates (already sorted best first).
pub(super) fn select(
    placement: &Placement,
    workload: &Workload,
    candidates: Vec<Candidate>,
) -> Result<Selected, String> {
    let static_weighted = placement.scheduling_type() == DIVIDED
        && division_preference(placement) == WEIGHTED
        && !dynamic_weight(placement);
    // `shouldIgnoreSpreadConstraint`: static weights decide alone.
    if placement.spread_constraints.is_empty() || static_weighted {
        return Ok(Selected {
            chosen: candidates,
            dropped: Vec::new(),
        });
    }
    // `shouldIgnoreAvailableResource`: Duplicated needs no room check.
    let need = (placement.scheduling_type() != DUPLICATED).then_some(i64::from(workload.replicas));
    let by = |field: &str| {
        placement
            .spread_constraints
            .iter()
            .find(|c| c.spread_by_field.as_deref() == Some(field))
    };
    let chosen: Vec<Candidate> = if let Some(region) = by("region") {
        // One best cluster of each of the best regions (by their best cluster).
        let mut firsts: Vec<&Candidate> = Vec::new();
        for c in &candidates {
            let r = c.cluster.spec.region.as_deref().unwrap_or_default();
            if !firsts
                .iter()
                .any(|f| f.cluster.spec.region.as_deref().unwrap_or_default() == r)
            {
                firsts.push(c);
            }
        }
        if firsts.len() < region.min_groups {
            return Err(
                "failed to select clusters: the number of feasible region is less than spreadConstraint.MinGroups"
                    .to_owned(),
            );
        }
        firsts
            .into_iter()
            .take(region.max_groups.max(1))
            .cloned()
            .collect()
    } else if let Some(cluster) = by("cluster") {
        if candidates.len() < cluster.min_groups {
            return Err("failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups".to_owned());
        }
        let count = candidates.len().min(cluster.max_groups);
        let mut chosen: Vec<Candidate> = candidates.iter().take(count).cloned().collect();
        let mut rest: Vec<Candidate> = candidates.iter().skip(count).cloned().collect();
        if let Some(need) = need {
            // `selectClustersByAvailableResource`: swap in larger clusters from the back.
            let enough = |set: &[Candidate]| set.iter().map(|c| c.available).sum::<i64>() >= need;
            let mut at = chosen.len();
            while !enough(&chosen) && at > 0 {
                at -= 1;
                let mut best: Option<usize> = None;
                let mut most = chosen[at].available;
                for (i, r) in rest.iter().enumerate() {
                    if r.available > most {
                        most = r.available;
                        best = Some(i);
                    }
                }
                if let Some(i) = best {
                    std::mem::swap(&mut chosen[at], &mut rest[i]);
                }
            }
            if !enough(&chosen) {
                return Err(format!(
                    "failed to select clusters: no enough resource when selecting {count} clusters"
                ));
            }
        }
        chosen
    } else {
        return Err(
            "failed to select clusters: just support cluster and region spread constraint"
                .to_owned(),
        );
    };
    let dropped = candidates
        .iter()
        .filter(|c| !chosen.iter().any(|k| k.name == c.name))
        .map(|c| c.name.clone())
        .collect();
    Ok(Selected { chosen, dropped })
}

/// `AssignReplicas` (`pkg/scheduler/core/common.go`, `assignment.go`): the replicas of each
/// chosen cluster, clusters given none removed.
pub(super) fn assign(
    placement: &Placement,
    workload: &Workload,
    chosen: &[Candidate],
) -> Result<Vec<TargetCluster>, String> {
    if chosen.is_empty() {
        return Err("failed to assign replicas: no clusters available to schedule".to_owned());
    }
    if workload.replicas <= 0 && !workload.has_replica_requirements {
        // Objects without replicas go whole to every chosen cluster.
        return Ok(chosen
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas: 0,
            })
            .collect());
    }
    let assigned = if placement.scheduling_type() == DIVIDED {
        if division_preference(placement) == AGGREGATED || dynamic_weight(placement) {
            divide_dynamically(placement, workload, chosen)?
        } else {
            divide_by_static_weight(placement, workload, chosen)
        }
    } else {
        chosen
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas: workload.replicas,
            })
            .collect()
    };
    Ok(assigned.into_iter().filter(|t| t.replicas > 0).collect())
}

/// `assignByStaticWeightStrategy`: each cluster's weight is the largest of the rules it
/// matches; clusters without weight are ignored; no weight at all means equal weights.
pub(super) fn divide_by_static_weight(
    placement: &Placement,
    workload: &Workload,
    chosen: &[Candidate],
) -> Vec<TargetCluster> {
    let rules = placement
        .replica_scheduling
        .as_ref()
        .and_then(|r| r.weight_preference.as_ref())
        .map(|w| w.static_weight_list.as_slice())
        .unwrap_or_default();
    let mut votes: Vec<(String, i64)> = chosen
        .iter()
        .filter_map(|c| {
            let weight = rules
                .iter()
                .filter(|r| affinity_matches(&c.cluster, &r.target_cluster))
                .map(|r| r.weight)
                .max()
                .unwrap_or(0);
            (weight > 0).then(|| (c.name.clone(), weight))
        })
        .collect();
    if votes.is_empty() {
        votes = chosen.iter().map(|c| (c.name.clone(), 1)).collect();
    }
    webster(workload.replicas, &votes, &[], &workload.uid)
}

/// `assignByDynamicStrategy` in its steady mode: keep what is placed, add the missing
/// replicas by what each cluster can still hold, or take the surplus back by what each holds.
fn divide_dynamically(
    placement: &Placement,
    workload: &Workload,
    chosen: &[Candidate],
) -> Result<Vec<TargetCluster>, String> {
    let aggregated = division_preference(placement) == AGGREGATED;
    let scheduled: Vec<TargetCluster> = workload
        .scheduled
        .iter()
        .filter(|t| chosen.iter().any(|c| c.name == t.name))
        .cloned()
        .collect();
    let assigned: i32 = scheduled.iter().map(|t| t.replicas).sum();
    let (target, mut available, keep, step) = if assigned > workload.replicas {
        let mut held = scheduled.clone();
        held.sort_by_key(|t| std::cmp::Reverse(t.replicas));
        (workload.replicas, held, Vec::new(), "scale down")
    } else if assigned < workload.replicas {
        let room: Vec<TargetCluster> = chosen
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas: c.allocatable,
            })
            .collect();
        let mut room = room;
        room.sort_by_key(|t| std::cmp::Reverse(t.replicas));
        (
            workload.replicas - assigned,
            room,
            scheduled.clone(),
            "scale up",
        )
    } else {
        return Ok(scheduled);
    };
    let total: i32 = available.iter().map(|t| t.replicas).sum();
    if total < target {
        return Err(format!(
            "failed to assign replicas: failed to {step}: Clusters available replicas {total} are not enough to schedule."
        ));
    }
    if aggregated {
        // `resortAvailableClusters`: clusters holding replicas first, then the fewest
        // clusters that can hold the target.
        let (mut first, rest): (Vec<_>, Vec<_>) = available
            .into_iter()
            .partition(|t| keep.iter().any(|k| k.name == t.name && k.replicas > 0));
        first.extend(rest);
        let mut sum = 0;
        let mut cut = first.len();
        for (i, t) in first.iter().enumerate() {
            sum += t.replicas;
            if sum >= target {
                cut = i + 1;
                break;
            }
        }
        first.truncate(cut);
        available = first;
    }
    let votes: Vec<(String, i64)> = available
        .iter()
        .map(|t| (t.name.clone(), i64::from(t.replicas)))
        .collect();
    let mut merged: BTreeMap<String, i32> = BTreeMap::new();
    for t in keep
        .iter()
        .chain(webster(target, &votes, &[], &workload.uid).iter())
    {
        *merged.entry(t.name.clone()).or_default() += t.replicas;
    }
    Ok(merged
        .into_iter()
        .map(|(name, replicas)| TargetCluster { name, replicas })
        .collect())
}
