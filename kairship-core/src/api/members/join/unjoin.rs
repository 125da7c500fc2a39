//! Unjoining a member cluster in the order `karmadactl unjoin` follows (karmada-io/karmada
//! `pkg/karmadactl/unjoin/unjoin.go`, `RunUnJoinCluster`): the `Cluster` is deleted first and
//! Karmada is given the time to clean up; only once the Cluster is gone are the join's objects
//! removed from the member, then its credential Secrets from the instance.
//!
//! While the Cluster is being deleted, Karmada's cluster controller holds it with the finalizer
//! `karmada.io/cluster-controller` until the execution space `karmada-es-<name>` is empty, and
//! its execution controller deletes from the member what each Work there applied, with the
//! credentials the instance stores. Taking those credentials away earlier would leave Karmada's
//! objects in the member. A member Karmada cannot reach (not Ready) gets its Works released
//! without that cleanup, as Karmada does; a forced unjoin then says what may remain.

use std::time::Duration;

use kube::Client;
use kube::api::{DeleteParams, PropagationPolicy};
use kube::core::{ApiResource, DynamicObject};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Join, decode_data, is_status, member_api, stored_member_client, timed, to_value};
use crate::access::{Caller, Verb};
use crate::api::error::{ApiError, Code};
use crate::api::inside::Inside;
use crate::api::kairship::KairshipService;
use crate::api::kinds::{
    cluster_resource_bindings_resource, resource_bindings_resource, works_resource,
};
use crate::api::members::objects::{
    self, CLUSTER_NAMESPACE, MemberNames, bindings_targeting, made_by_join, member_objects, secrets,
};
use crate::api::{Object, RemoveClusterRequest};
use crate::router::{ListQuery, ResourceTarget};

/// How often the Cluster is read while waiting.
const POLL: Duration = Duration::from_millis(500);

/// Karmada's execution space of member `cluster` (`names.GenerateExecutionSpaceName`).
pub fn execution_space(cluster: &str) -> String {
    format!("karmada-es-{cluster}")
}

/// What an unjoin did, in the answer beside the Cluster (`unjoin`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnjoinReport {
    /// Seconds spent waiting for Karmada to remove the Cluster.
    pub waited_seconds: f64,
    /// What may remain in the member, and why (only a forced unjoin leaves anything).
    pub left_behind: Vec<String>,
}

/// `Kind namespace/name` of each object the Works of `works` apply.
pub fn applied_by_works(works: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for work in works {
        for manifest in work
            .pointer("/spec/workload/manifests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let kind = manifest["kind"].as_str().unwrap_or("object");
            let name = manifest.pointer("/metadata/name").and_then(Value::as_str);
            let Some(name) = name else { continue };
            out.push(
                match manifest
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                {
                    Some(ns) => format!("{kind} {ns}/{name}"),
                    None => format!("{kind} {name}"),
                },
            );
        }
    }
    out.sort();
    out.dedup();
    out
}

/// What stays in an unreachable member: the join's objects, and what Karmada applied there
/// (`applied`), which it releases without deleting when it cannot reach the member.
pub fn left_in_unreachable_member(
    instance: &str,
    cluster: &str,
    why: &str,
    applied: &[String],
) -> Vec<String> {
    let mut left: Vec<String> = member_objects(instance, cluster, &[])
        .iter()
        .map(|p| {
            let note = if p.shared {
                " (if the join created it)"
            } else {
                ""
            };
            format!("{}{note} in the member: {why}", p.describe())
        })
        .collect();
    left.extend(applied.iter().map(|o| {
        format!("{o} in the member: applied by Karmada, which could not delete it ({why})")
    }));
    left
}

/// The answer of an unjoin: the Cluster as it was last read, with the report under `unjoin`.
pub fn answer(cluster: Value, report: &UnjoinReport) -> Value {
    let mut answer = cluster;
    if let Some(map) = answer.as_object_mut() {
        map.insert("unjoin".into(), json!(report));
    }
    answer
}

fn with_context(err: ApiError, context: &str) -> ApiError {
    ApiError::new(err.code, format!("{context}: {}", err.message))
}

impl KairshipService {
    /// Unjoin: see [`KairshipApi::remove_cluster`](crate::api::KairshipApi::remove_cluster).
    pub(in crate::api) async fn unjoin(
        &self,
        caller: &Caller,
        req: RemoveClusterRequest,
    ) -> Result<Object, ApiError> {
        let cluster = req.cluster.as_str();
        let instance = req.instance.as_str();
        let force = req.force.unwrap_or(false);
        let call = Inside::clusters(instance, Verb::Delete, "remove member clusters")
            .named("cluster", cluster);
        self.inside(caller, call, |c| async move {
            let object = to_value(self.router.get(&c.target, cluster).await?.as_ref());
            let deleting = object.pointer("/metadata/deletionTimestamp").is_some();
            if !force && !deleting {
                let users = self.bindings_to(instance, cluster).await?;
                if !users.is_empty() {
                    return Err(ApiError::failed_precondition(format!(
                        "member cluster {cluster} of instance {instance} is still the target of \
                         {}: remove or re-target those first, or unjoin with force=true",
                        users.join(", ")
                    )));
                }
            }
            let join = Join {
                service: self,
                instance,
                cluster,
                caller,
                member: None,
                created: Vec::new(),
                step: 0,
            };
            let joined = made_by_join(&object, cluster);
            let push = object.pointer("/spec/syncMode").and_then(Value::as_str) == Some("Push");
            // The stored credentials are read (and the member tried) before Karmada may drop
            // them; an unforced unjoin of a member that does not answer removes nothing.
            let member = if joined && push {
                Some(self.reach_member(&join, &object).await)
            } else {
                None
            };
            if let (Some(Err(err)), false) = (&member, force) {
                return Err(with_context(
                    err.clone(),
                    &format!(
                        "cannot reach member cluster {cluster} with the credentials the instance \
                         stores; nothing was removed (unjoin with force=true to remove it from \
                         the instance anyway)"
                    ),
                ));
            }
            let applied = self.applied_in_member(instance, cluster, caller).await;
            if !deleting {
                match self
                    .router
                    .delete(&c.target, cluster, &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(err) if err.is_not_found() => {}
                    Err(err) => return Err(err.into()),
                }
            }
            let started = tokio::time::Instant::now();
            self.wait_until_gone(&c.target, instance, cluster, caller)
                .await?;
            let mut report = UnjoinReport {
                waited_seconds: started.elapsed().as_secs_f64(),
                left_behind: Vec::new(),
            };
            let member_failure = match member {
                Some(Ok(client)) => remove_member_side(&client, cluster).await.err(),
                Some(Err(err)) => Some(err),
                None => None,
            };
            if let Some(err) = &member_failure {
                report.left_behind =
                    left_in_unreachable_member(instance, cluster, &err.message, &applied);
                tracing::warn!(instance, cluster, error = %err.message, "unjoin: objects stay in the member");
            }
            self.remove_karmada_side(&join).await?;
            if let (Some(err), false) = (member_failure, force) {
                return Err(with_context(
                    err,
                    &format!(
                        "member cluster {cluster} was removed from instance {instance}, but the \
                         join's objects could not be removed from the member (they stay: {})",
                        report.left_behind.join("; ")
                    ),
                ));
            }
            tracing::info!(instance, cluster, left_behind = report.left_behind.len(), "unjoined member cluster");
            Ok(answer(object, &report))
        })
        .await
    }

    /// The bindings (`Kind namespace/name`) that schedule to `cluster`.
    async fn bindings_to(&self, instance: &str, cluster: &str) -> Result<Vec<String>, ApiError> {
        let mut items = Vec::new();
        for resource in [
            resource_bindings_resource(),
            cluster_resource_bindings_resource(),
        ] {
            let target = ResourceTarget::all(instance, resource);
            match self.router.list(&target, &ListQuery::default()).await {
                Ok(page) => items.extend(page.items),
                Err(err) if err.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        let refs: Vec<&DynamicObject> = items.iter().map(AsRef::as_ref).collect();
        Ok(bindings_targeting(&refs, cluster))
    }

    /// The Works of the execution space of `cluster`; `None` when they cannot be read.
    async fn works_of(&self, instance: &str, cluster: &str, caller: &Caller) -> Option<Vec<Value>> {
        let target =
            ResourceTarget::namespaced(instance, works_resource(), execution_space(cluster))
                .acting_as(caller.clone());
        match self.router.list(&target, &ListQuery::default()).await {
            Ok(page) => Some(page.items.iter().map(|w| to_value(w)).collect()),
            Err(err) if err.is_not_found() => Some(Vec::new()),
            Err(_) => None,
        }
    }

    /// What Karmada applied in the member (the manifests of its Works), to say what stays
    /// should Karmada be unable to delete it.
    async fn applied_in_member(
        &self,
        instance: &str,
        cluster: &str,
        caller: &Caller,
    ) -> Vec<String> {
        self.works_of(instance, cluster, caller)
            .await
            .map(|works| applied_by_works(&works))
            .unwrap_or_default()
    }

    /// Waits (at most `unjoin_wait` of the service's configuration) until Karmada has removed
    /// the Cluster; past that, an `Unavailable` error says how far Karmada got, and calling
    /// again waits again.
    async fn wait_until_gone(
        &self,
        target: &ResourceTarget,
        instance: &str,
        cluster: &str,
        caller: &Caller,
    ) -> Result<(), ApiError> {
        let wait = self.config.unjoin_wait;
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match self.router.get(target, cluster).await {
                Err(err) if err.is_not_found() => return Ok(()),
                Err(err) => return Err(err.into()),
                Ok(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                let works = match self.works_of(instance, cluster, caller).await {
                    Some(works) => {
                        format!("{} Works left in {}", works.len(), execution_space(cluster))
                    }
                    None => format!("the Works of {} cannot be read", execution_space(cluster)),
                };
                return Err(ApiError::unavailable(format!(
                    "Karmada has not finished removing member cluster {cluster} of instance \
                     {instance} within {wait:?} ({works}); the Cluster is being deleted \
                     and the member's credentials are kept until it is gone: unjoin again to \
                     wait for it and finish"
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A client of a Push member from the credentials the instance stores (`spec.apiEndpoint`
    /// and the `secretRef` Secret), once the member answered with them.
    async fn reach_member(&self, join: &Join<'_>, cluster: &Value) -> Result<Client, ApiError> {
        let name = join.cluster;
        let endpoint = cluster
            .pointer("/spec/apiEndpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::failed_precondition("the Cluster has no apiEndpoint"))?;
        let secret_target = join.target(&secrets(), Some(CLUSTER_NAMESPACE));
        let secret = self.router.get(&secret_target, name).await?;
        let secret = to_value(&secret);
        let token = decode_data(&secret, "token")
            .ok_or_else(|| ApiError::failed_precondition("the credential Secret has no token"))?;
        let ca = decode_data(&secret, "caBundle");
        let client = stored_member_client(endpoint, &token, ca.as_deref()).await?;
        let anchor = MemberNames::of(name).role;
        let api = member_api(&client, &objects::cluster_role_bindings(), None);
        match timed(api.get(&anchor)).await {
            Ok(_) => Ok(client),
            Err(e) if is_status(&e, Code::NotFound) => Ok(client),
            Err(e) => Err(e),
        }
    }
}

/// Deletes the member-side objects of a Push join with the credentials the instance stored:
/// the impersonator's objects, then the anchor binding, whose dependents (the ServiceAccount,
/// its token and ClusterRole, and the namespace `karmada-cluster` if the join created it) the
/// member's garbage collector removes, as `karmadactl unjoin` removes them
/// (`deleteRBACResources`, `deleteServiceAccount`, `deleteNamespaceFromUnjoinCluster`).
async fn remove_member_side(client: &Client, cluster: &str) -> Result<(), ApiError> {
    let n = MemberNames::of(cluster);
    let ns = Some(CLUSTER_NAMESPACE);
    let order: [(ApiResource, Option<&str>, &str); 5] = [
        (objects::cluster_role_bindings(), None, &n.impersonator),
        (objects::cluster_roles(), None, &n.impersonator),
        (secrets(), ns, &n.impersonator_token_secret),
        (objects::service_accounts(), ns, &n.impersonator),
        (objects::cluster_role_bindings(), None, &n.role),
    ];
    for (resource, namespace, object) in order {
        let api = member_api(client, &resource, namespace);
        let existing = match timed(api.get(object)).await {
            Ok(o) => to_value(&o),
            Err(e) if is_status(&e, Code::NotFound) => continue,
            Err(e) => return Err(e),
        };
        if !made_by_join(&existing, cluster) {
            continue;
        }
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        match timed(api.delete(object, &params)).await {
            Ok(_) => {}
            Err(e) if is_status(&e, Code::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_objects_works_apply_are_named() {
        let works = [
            json!({"spec": {"workload": {"manifests": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "demo"}},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}},
            ]}}}),
            json!({"spec": {"workload": {"manifests": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop", "namespace": "demo"}},
                {"kind": "ConfigMap", "metadata": {}},
            ]}}}),
            json!({"spec": {}}),
        ];
        assert_eq!(
            applied_by_works(&works),
            ["Deployment demo/shop", "Namespace demo"]
        );
    }

    #[test]
    fn an_unreachable_member_keeps_the_join_and_what_karmada_applied() {
        let left = left_in_unreachable_member(
            "i1",
            "m1",
            "connection refused",
            &["Deployment demo/shop".to_owned()],
        );
        assert_eq!(left.len(), 10, "{left:?}");
        assert!(left.contains(
            &"ClusterRole karmada-impersonator in the member: connection refused".to_owned()
        ));
        assert!(left.contains(
            &"Namespace karmada-cluster (if the join created it) in the member: connection refused"
                .to_owned()
        ));
        assert_eq!(
            left[9],
            "Deployment demo/shop in the member: applied by Karmada, which could not delete it \
             (connection refused)"
        );
        let report = UnjoinReport {
            waited_seconds: 1.5,
            left_behind: vec!["x".into()],
        };
        let answered = answer(json!({"metadata": {"name": "m1"}}), &report);
        assert_eq!(answered["metadata"]["name"], "m1");
        assert_eq!(
            answered["unjoin"],
            json!({"waitedSeconds": 1.5, "leftBehind": ["x"]})
        );
    }
}
