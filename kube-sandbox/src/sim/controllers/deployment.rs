//! The Deployment controller, after kube-controller-manager's: one ReplicaSet per pod
//! template (`<deployment>-<pod-template-hash>`), revisions, scaling (proportional while a
//! rollout is under way), RollingUpdate within maxSurge/maxUnavailable, Recreate, `paused`,
//! old ReplicaSets removed beyond `revisionHistoryLimit`, status and the Available and
//! Progressing conditions that `kubectl rollout status` reads.

use super::Pass;
use super::objects::{
    Writer, at, by_creation, conditions_of, controller_ref, int_at, is_deleting, is_terminal,
    name_of, namespace_of, owned_by, rfc3339, set_condition, str_at, uid_of,
};
use super::pod_template_hash::template_hash;
use super::rollout::{available_scale_down, fenceposts, new_rs_replicas, old_scale_down_budget};
use crate::apiserver::error::ApiError;
use serde_json::{Map, Value, json};

/// The field manager of its writes.
pub const NAME: &str = "deployment-controller";
/// The revision annotation of Deployments and their ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The label that tells a Deployment's ReplicaSets (and their pods) apart.
pub const HASH_LABEL: &str = "pod-template-hash";
/// Annotations of a Deployment not copied to its ReplicaSets (upstream `annotationsToSkip`).
const NOT_COPIED: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    "deployment.kubernetes.io/revision-history",
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// Syncs every Deployment.
pub fn sync_all(pass: &Pass) {
    let writer = Writer {
        state: pass.state,
        manager: NAME,
    };
    let all_rs = pass.list("apps", "replicasets");
    for d in pass.list("apps", "deployments") {
        if is_deleting(&d) {
            continue;
        }
        if let Err(e) = sync(pass, &writer, &d, &all_rs) {
            tracing::debug!(deployment = name_of(&d), "sync failed: {e}");
        }
    }
}

/// What one sync works on: the Deployment's settings and its ReplicaSets.
struct Rollout<'a> {
    d: &'a Value,
    desired: i64,
    max_surge: i64,
    max_unavailable: i64,
    recreate: bool,
    /// The ReplicaSets it controls, oldest first; `new` indexes the one matching the template.
    sets: Vec<Value>,
    new: Option<usize>,
}

fn sync(pass: &Pass, w: &Writer, d: &Value, all_rs: &[Value]) -> Result<(), ApiError> {
    let namespace = namespace_of(d);
    let mut sets: Vec<Value> = owned_by(all_rs, uid_of(d))
        .into_iter()
        .filter(|rs| namespace_of(rs) == namespace && !is_deleting(rs))
        .cloned()
        .collect();
    sets.sort_by(by_creation);
    let template = at(d, &["spec", "template"]).cloned().unwrap_or(json!({}));
    let new = sets
        .iter()
        .position(|rs| same_template(at(rs, &["spec", "template"]), &template));
    let desired = int_at(d, &["spec", "replicas"]).unwrap_or(1).max(0);
    let recreate = str_at(d, &["spec", "strategy", "type"]) == "Recreate";
    let (max_surge, max_unavailable) = if recreate {
        (0, 0)
    } else {
        fenceposts(at(d, &["spec", "strategy", "rollingUpdate"]), desired)
    };
    let mut r = Rollout {
        d,
        desired,
        max_surge,
        max_unavailable,
        recreate,
        sets,
        new,
    };
    let paused = at(d, &["spec", "paused"]).and_then(Value::as_bool) == Some(true);
    let max_old_revision = r.old().map(revision).max().unwrap_or(0);

    if let Some(i) = r.new {
        // A template rolled back to keeps its ReplicaSet, which becomes the newest revision.
        if revision(&r.sets[i]) <= max_old_revision {
            let next = (max_old_revision + 1).to_string();
            w.update("apps", "replicasets", &r.sets[i], None, |rs| {
                set_annotation(rs, REVISION, &next);
            })?;
            return Ok(());
        }
        let current = revision(&r.sets[i]).to_string();
        if str_at(d, &["metadata", "annotations", REVISION]) != current {
            // Through the status subresource, as upstream's `getNewReplicaSet` does.
            w.update("apps", "deployments", d, Some("status"), |d| {
                set_annotation(d, REVISION, &current);
            })?;
        }
    }

    let mut progressing_reason = None;
    if paused || r.is_scaling_event() {
        if r.new.is_some() || !r.sets.is_empty() {
            r.scale(w)?;
        }
        if paused {
            r.cleanup(w)?;
        }
    } else if r.recreate {
        let mut scaled = false;
        for i in 0..r.sets.len() {
            if Some(i) != r.new && replicas(&r.sets[i]) > 0 {
                r.set_replicas(w, i, 0)?;
                scaled = true;
            }
        }
        let old_pods_running = {
            let pods = pass.pods_in(namespace);
            r.old()
                .any(|rs| owned_by(&pods, uid_of(rs)).iter().any(|p| !is_terminal(p)))
        };
        if !scaled && !old_pods_running {
            match r.new {
                None => {
                    let name = r.create_new(w, max_old_revision, &template, desired)?;
                    progressing_reason = Some(("NewReplicaSetCreated", name));
                }
                Some(i) => {
                    if replicas(&r.sets[i]) != desired {
                        r.set_replicas(w, i, desired)?;
                    }
                }
            }
        }
    } else {
        match r.new {
            None => {
                let all = r.total_replicas();
                let count = new_rs_replicas(desired, max_surge, all, 0);
                let name = r.create_new(w, max_old_revision, &template, count)?;
                progressing_reason = Some(("NewReplicaSetCreated", name));
            }
            Some(i) => {
                let current = replicas(&r.sets[i]);
                let next = if current > desired {
                    desired
                } else {
                    new_rs_replicas(desired, max_surge, r.total_replicas(), current)
                };
                if next != current {
                    r.set_replicas(w, i, next)?;
                } else {
                    r.scale_down_old(w)?;
                }
            }
        }
    }
    if !paused && r.complete() {
        r.cleanup(w)?;
    }
    r.write_status(pass, w, paused, progressing_reason)
}

impl Rollout<'_> {
    fn old(&self) -> impl Iterator<Item = &Value> {
        self.sets
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != self.new)
            .map(|(_, rs)| rs)
    }

    fn total_replicas(&self) -> i64 {
        self.sets.iter().map(replicas).sum()
    }

    /// Whether a ReplicaSet still carries another desired count than the Deployment's
    /// (upstream `isScalingEvent`).
    fn is_scaling_event(&self) -> bool {
        let desired = self.desired.to_string();
        self.sets.iter().any(|rs| {
            replicas(rs) > 0
                && str_at(rs, &["metadata", "annotations", DESIRED_REPLICAS]) != desired.as_str()
        })
    }

    fn set_replicas(&mut self, w: &Writer, i: usize, count: i64) -> Result<(), ApiError> {
        let before = replicas(&self.sets[i]);
        if before != count {
            let direction = if count > before { "up" } else { "down" };
            w.event(
                self.d,
                "Normal",
                "ScalingReplicaSet",
                &format!(
                    "Scaled {direction} replica set {} from {before} to {count}",
                    name_of(&self.sets[i])
                ),
            );
        }
        let desired = self.desired.to_string();
        let max = (self.desired + self.max_surge).to_string();
        w.update("apps", "replicasets", &self.sets[i], None, |rs| {
            rs["spec"]["replicas"] = json!(count);
            set_annotation(rs, DESIRED_REPLICAS, &desired);
            set_annotation(rs, MAX_REPLICAS, &max);
        })?;
        self.sets[i]["spec"]["replicas"] = json!(count);
        Ok(())
    }

    /// Upstream `scale`: the one active (or latest) ReplicaSet takes the new count; several
    /// active ones share the difference in proportion to their size, the largest taking what
    /// is left.
    fn scale(&mut self, w: &Writer) -> Result<(), ApiError> {
        let active: Vec<usize> = (0..self.sets.len())
            .filter(|i| replicas(&self.sets[*i]) > 0)
            .collect();
        let target = match active.len() {
            0 => self.new.or(self.sets.len().checked_sub(1)),
            1 => Some(active[0]),
            _ => None,
        };
        if let Some(i) = target {
            return self.set_replicas(w, i, self.desired);
        }
        let allowed = if self.desired > 0 {
            self.desired + self.max_surge
        } else {
            0
        };
        let to_add = allowed - self.total_replicas();
        let mut order = active.clone();
        // Larger first; newer first when adding, older first when removing.
        order.sort_by(|a, b| {
            let size = replicas(&self.sets[*b]).cmp(&replicas(&self.sets[*a]));
            if to_add > 0 {
                size.then(b.cmp(a))
            } else {
                size.then(a.cmp(b))
            }
        });
        let fallback_total = int_at(self.d, &["status", "replicas"]).unwrap_or(0);
        let mut added = 0;
        let mut sizes: Vec<(usize, i64)> = Vec::new();
        for &i in &order {
            let rs = &self.sets[i];
            let size = replicas(rs);
            let proportion = if to_add == 0 {
                0
            } else if self.desired == 0 {
                -size
            } else {
                let annotated = str_at(rs, &["metadata", "annotations", MAX_REPLICAS])
                    .parse::<i64>()
                    .unwrap_or(fallback_total);
                let fraction = if annotated > 0 {
                    ((size * allowed) as f64 / annotated as f64).round() as i64 - size
                } else {
                    0
                };
                let allowed_left = to_add - added;
                if to_add > 0 {
                    fraction.min(allowed_left)
                } else {
                    fraction.max(allowed_left)
                }
            };
            added += proportion;
            sizes.push((i, size + proportion));
        }
        if let Some(first) = sizes.first_mut() {
            first.1 = (first.1 + to_add - added).max(0);
        }
        for (i, size) in sizes {
            self.set_replicas(w, i, size.max(0))?;
        }
        Ok(())
    }

    /// Upstream `reconcileOldReplicaSets`: unhealthy old pods go first, then available ones
    /// down to `desired - maxUnavailable`.
    fn scale_down_old(&mut self, w: &Writer) -> Result<(), ApiError> {
        let Some(n) = self.new else { return Ok(()) };
        if self.old().map(replicas).sum::<i64>() == 0 {
            return Ok(());
        }
        let new_rs = &self.sets[n];
        let mut budget = old_scale_down_budget(
            self.desired,
            self.max_unavailable,
            self.total_replicas(),
            replicas(new_rs),
            available(new_rs),
        );
        if budget <= 0 {
            return Ok(());
        }
        let old: Vec<usize> = (0..self.sets.len()).filter(|i| *i != n).collect();
        for &i in &old {
            let rs = &self.sets[i];
            let (spec, avail) = (replicas(rs), available(rs));
            if budget <= 0 || spec == 0 || spec == avail {
                continue;
            }
            let down = budget.min(spec - avail);
            budget -= down;
            self.set_replicas(w, i, spec - down)?;
        }
        let total_available: i64 = self.sets.iter().map(available).sum();
        let mut left = available_scale_down(self.desired, self.max_unavailable, total_available);
        for &i in &old {
            let spec = replicas(&self.sets[i]);
            if left <= 0 {
                break;
            }
            if spec == 0 {
                continue;
            }
            let down = spec.min(left);
            left -= down;
            self.set_replicas(w, i, spec - down)?;
        }
        Ok(())
    }

    /// Creates the ReplicaSet of the current template; on a name taken by another template the
    /// collision count goes up and the next pass tries another name.
    fn create_new(
        &mut self,
        w: &Writer,
        max_old_revision: i64,
        template: &Value,
        count: i64,
    ) -> Result<String, ApiError> {
        let d = self.d;
        let collisions = int_at(d, &["status", "collisionCount"]).map(|c| c as u32);
        let hash = template_hash(template, collisions);
        let name = format!("{}-{hash}", name_of(d));
        let mut rs_template = template.clone();
        rs_template["metadata"]["labels"][HASH_LABEL] = json!(hash);
        let mut selector = at(d, &["spec", "selector"]).cloned().unwrap_or(json!({}));
        selector["matchLabels"][HASH_LABEL] = json!(hash);
        let mut annotations: Map<String, Value> = at(d, &["metadata", "annotations"])
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter(|(k, _)| !NOT_COPIED.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        annotations.insert(REVISION.into(), json!((max_old_revision + 1).to_string()));
        annotations.insert(DESIRED_REPLICAS.into(), json!(self.desired.to_string()));
        annotations.insert(
            MAX_REPLICAS.into(),
            json!((self.desired + self.max_surge).to_string()),
        );
        let body = json!({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "labels": rs_template["metadata"]["labels"],
                "annotations": annotations,
                "ownerReferences": [controller_ref(d)],
            },
            "spec": {
                "replicas": count,
                "minReadySeconds": int_at(d, &["spec", "minReadySeconds"]).unwrap_or(0),
                "selector": selector,
                "template": rs_template,
            }
        });
        match w.create("apps", "replicasets", namespace_of(d), body) {
            Ok(created) => {
                if count > 0 {
                    w.event(
                        d,
                        "Normal",
                        "ScalingReplicaSet",
                        &format!("Scaled up replica set {name} from 0 to {count}"),
                    );
                }
                self.sets.push(created.value.clone());
                self.new = Some(self.sets.len() - 1);
                Ok(name)
            }
            Err(e) if e.code == 409 => {
                let next = collisions.unwrap_or(0) + 1;
                w.update("apps", "deployments", d, Some("status"), |d| {
                    d["status"]["collisionCount"] = json!(next);
                })?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Whether the rollout is done (upstream `DeploymentComplete`).
    fn complete(&self) -> bool {
        let Some(n) = self.new else { return false };
        let new_rs = &self.sets[n];
        let actual: i64 = self.sets.iter().map(actual_replicas).sum();
        let available: i64 = self.sets.iter().map(available).sum();
        actual_replicas(new_rs) == self.desired
            && actual == self.desired
            && available == self.desired
            && self.old().all(|rs| replicas(rs) == 0)
    }

    /// Deletes the oldest scaled-down ReplicaSets beyond `revisionHistoryLimit` (default 10).
    fn cleanup(&self, w: &Writer) -> Result<(), ApiError> {
        let limit = int_at(self.d, &["spec", "revisionHistoryLimit"]).unwrap_or(10);
        let mut old: Vec<&Value> = self.old().collect();
        let excess = old.len() as i64 - limit.max(0);
        if excess <= 0 {
            return Ok(());
        }
        old.sort_by_key(|rs| revision(rs));
        for rs in old.into_iter().take(excess as usize) {
            let settled = int_at(rs, &["status", "observedGeneration"]).unwrap_or(0)
                >= int_at(rs, &["metadata", "generation"]).unwrap_or(0);
            if replicas(rs) == 0 && actual_replicas(rs) == 0 && settled {
                w.delete("apps", "replicasets", rs)?;
            }
        }
        Ok(())
    }

    fn write_status(
        &self,
        pass: &Pass,
        w: &Writer,
        paused: bool,
        created: Option<(&str, String)>,
    ) -> Result<(), ApiError> {
        let d = self.d;
        let sum = |f: fn(&Value) -> i64| -> i64 { self.sets.iter().map(f).sum() };
        let available = sum(available);
        let unavailable = (sum(replicas) - available).max(0);
        let updated = self
            .new
            .map(|n| actual_replicas(&self.sets[n]))
            .unwrap_or(0);
        let now = rfc3339(pass.now);
        let mut conditions = conditions_of(d);
        let max_unavailable = if self.recreate {
            0
        } else {
            self.max_unavailable.min(self.desired)
        };
        if available >= self.desired - max_unavailable {
            set_condition(
                &mut conditions,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                &now,
                true,
            );
        } else {
            set_condition(
                &mut conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                &now,
                true,
            );
        }
        let new_name = self.new.map(|n| name_of(&self.sets[n]).to_string());
        let was_paused = conditions
            .iter()
            .any(|c| c["type"] == "Progressing" && c["reason"] == "DeploymentPaused");
        let progressing = if paused {
            Some((
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".to_string(),
            ))
        } else if was_paused {
            Some((
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed".to_string(),
            ))
        } else if let Some((reason, name)) = created {
            Some((
                "True",
                reason,
                format!("Created new replica set \"{name}\""),
            ))
        } else if let Some(name) = new_name {
            if self.complete() {
                Some((
                    "True",
                    "NewReplicaSetAvailable",
                    format!("ReplicaSet \"{name}\" has successfully progressed."),
                ))
            } else {
                Some((
                    "True",
                    "ReplicaSetUpdated",
                    format!("ReplicaSet \"{name}\" is progressing."),
                ))
            }
        } else {
            None
        };
        if let Some((status, reason, message)) = progressing {
            set_condition(
                &mut conditions,
                "Progressing",
                status,
                reason,
                &message,
                &now,
                true,
            );
        }
        let mut status = Map::new();
        status.insert(
            "observedGeneration".into(),
            json!(int_at(d, &["metadata", "generation"]).unwrap_or(0)),
        );
        // Zero counts are left out, as upstream's `omitempty` does.
        for (key, value) in [
            ("replicas", sum(actual_replicas)),
            ("updatedReplicas", updated),
            ("readyReplicas", sum(ready)),
            ("availableReplicas", available),
            ("unavailableReplicas", unavailable),
        ] {
            if value != 0 {
                status.insert(key.into(), json!(value));
            }
        }
        // A pointer upstream, so 0 is written; unknown (absent) while any ReplicaSet has not
        // reported it (kubernetes `pkg/controller/deployment/util/deployment_util.go`,
        // `GetTerminatingReplicaCountForReplicaSets`).
        let terminating: Option<i64> = self
            .sets
            .iter()
            .map(|rs| int_at(rs, &["status", "terminatingReplicas"]))
            .sum();
        if let Some(terminating) = terminating {
            status.insert("terminatingReplicas".into(), json!(terminating));
        }
        if let Some(c) = at(d, &["status", "collisionCount"]) {
            status.insert("collisionCount".into(), c.clone());
        }
        status.insert("conditions".into(), Value::Array(conditions));
        w.set_status("apps", "deployments", d, Value::Object(status))
    }
}

/// Whether two pod templates are equal once the `pod-template-hash` label is set aside
/// (upstream `EqualIgnoreHash`).
fn same_template(rs_template: Option<&Value>, template: &Value) -> bool {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(labels) = t
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.remove(HASH_LABEL);
        }
        t
    };
    rs_template.is_some_and(|t| strip(t) == strip(template))
}

fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"][key] = json!(value);
}

fn revision(rs: &Value) -> i64 {
    str_at(rs, &["metadata", "annotations", REVISION])
        .parse()
        .unwrap_or(0)
}

fn replicas(rs: &Value) -> i64 {
    int_at(rs, &["spec", "replicas"]).unwrap_or(1)
}

fn actual_replicas(rs: &Value) -> i64 {
    int_at(rs, &["status", "replicas"]).unwrap_or(0)
}

fn ready(rs: &Value) -> i64 {
    int_at(rs, &["status", "readyReplicas"]).unwrap_or(0)
}

/// Available pods of a ReplicaSet, no more than it is asked to keep: pods beyond
/// `spec.replicas` are about to go, so they do not count toward a rollout's availability.
fn available(rs: &Value) -> i64 {
    int_at(rs, &["status", "availableReplicas"])
        .unwrap_or(0)
        .min(replicas(rs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_compare_without_the_hash_label() {
        let t = json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": []}});
        let rs = json!({"metadata": {"labels": {"app": "a", HASH_LABEL: "x"}}, "spec": {"containers": []}});
        assert!(same_template(Some(&rs), &t));
        let other = json!({"metadata": {"labels": {"app": "b", HASH_LABEL: "x"}}, "spec": {"containers": []}});
        assert!(!same_template(Some(&other), &t));
        assert!(!same_template(None, &t));
    }
}
