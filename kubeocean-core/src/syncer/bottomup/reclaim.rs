//! Forced reclaim: with `forceReclaim`, once `gracefulReclaimPeriodSeconds` have passed since
//! a virtual node was tainted `kubeocean.io/out-of-time-windows:NoExecute`, the virtual pods
//! on it that do not tolerate the taint are deleted.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, Taint, Toleration};
use kube::Api;
use kube::api::ListParams;

use super::virtual_pods::delete_virtual_pod;
use crate::labels;
use crate::leasing::NO_EXECUTE;
use crate::syncer::context::Context;
use crate::syncer::error::SyncError;

/// Whether `tolerations` tolerate `taint`, by Kubernetes' rules: an empty key with `Exists`
/// tolerates everything; otherwise keys must match, `Exists` ignores the value, `Equal` (the
/// default) compares it; an empty effect matches every effect.
pub fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| {
        let effect_ok = t
            .effect
            .as_deref()
            .is_none_or(|e| e.is_empty() || e == taint.effect);
        let operator = t.operator.as_deref().unwrap_or("Equal");
        let key = t.key.as_deref().unwrap_or_default();
        if key.is_empty() {
            return operator == "Exists" && effect_ok;
        }
        let value_ok = match operator {
            "Exists" => true,
            "Equal" => {
                t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default()
            }
            _ => false,
        };
        key == taint.key && value_ok && effect_ok
    })
}

/// The out-of-time-windows `NoExecute` taint of a virtual node, if it has one.
pub fn reclaim_taint(vnode: &Node) -> Option<&Taint> {
    vnode
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|t| t.key == labels::TAINT_OUT_OF_TIME_WINDOWS && t.effect == NO_EXECUTE)
}

/// When the pods of a node tainted at `tainted_at` are reclaimed.
pub fn reclaim_at(tainted_at: Timestamp, grace_seconds: i32) -> Timestamp {
    tainted_at
        .checked_add(SignedDuration::from_secs(i64::from(grace_seconds.max(0))))
        .unwrap_or(tainted_at)
}

/// Deletes the virtual pods on `vnode` that do not tolerate `taint`; returns how many.
pub async fn reclaim(ctx: &Context, vnode: &str, taint: &Taint) -> Result<usize, SyncError> {
    let fail = |action, source| SyncError::VirtualPods {
        action,
        node: vnode.to_owned(),
        source,
    };
    let pods = Api::<Pod>::all(ctx.computing.clone())
        .list(&ListParams::default().fields(&format!("spec.nodeName={vnode}")))
        .await
        .map_err(|e| fail("list", e))?;
    let mut deleted = 0;
    for pod in pods.items {
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some() || tolerates(tolerations, taint) {
            continue;
        }
        delete_virtual_pod(ctx, &pod)
            .await
            .map_err(|e| fail("reclaim", e))?;
        deleted += 1;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leasing::taint;

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Toleration {
            key: opt(key),
            operator: opt(operator),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: None,
        }
    }

    #[test]
    fn toleration_table() {
        let t = taint(labels::TAINT_OUT_OF_TIME_WINDOWS, Some("true"), NO_EXECUTE);
        let key = labels::TAINT_OUT_OF_TIME_WINDOWS;
        let table = [
            (vec![], false),
            (vec![toleration("", "Exists", "", "")], true),
            (vec![toleration("", "Exists", "", "NoSchedule")], false),
            (vec![toleration(key, "Exists", "", "")], true),
            (vec![toleration(key, "", "true", "NoExecute")], true),
            (vec![toleration(key, "Equal", "false", "")], false),
            (vec![toleration("other", "Exists", "", "")], false),
            (
                vec![
                    toleration("other", "Exists", "", ""),
                    toleration(key, "Equal", "true", ""),
                ],
                true,
            ),
        ];
        for (i, (tolerations, want)) in table.into_iter().enumerate() {
            assert_eq!(tolerates(&tolerations, &t), want, "case {i}");
        }
    }

    #[test]
    fn reclaim_time_adds_the_grace_period() {
        let t0: Timestamp = "2025-01-06T12:00:00Z".parse().unwrap();
        assert_eq!(reclaim_at(t0, 30), "2025-01-06T12:00:30Z".parse().unwrap());
        assert_eq!(reclaim_at(t0, -5), t0);
    }
}
