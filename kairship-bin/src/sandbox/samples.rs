//! What the sandbox puts into each Karmada instance, as Karmada holds it after propagating: a
//! namespace, a ConfigMap, two Deployments, a PropagationPolicy placing them on the ready
//! members, and the Deployments' ResourceBindings with each member's aggregated status (no
//! Karmada scheduler runs in the sandbox, so the bindings are written as it would write them).

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kairship_core::api::resource_bindings_resource;
use kairship_core::api::workloads::view::deployment_binding_name;
use kairship_core::models::work::{PROPAGATION_POLICY_NAME_KEY, PROPAGATION_POLICY_NAMESPACE_KEY};
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::{Api, Client};
use serde_json::{Value, json};

/// Namespace of the sample objects.
pub const NAMESPACE: &str = "demo";
/// The PropagationPolicy placing them.
pub const POLICY: &str = "demo-spread";
/// The sample ConfigMap.
pub const CONFIG_MAP: &str = "web-config";
/// The sample Deployments and their replicas.
pub const DEPLOYMENTS: [(&str, i32); 2] = [("web", 3), ("api", 2)];

/// Splits `replicas` over `clusters` members as Karmada's Divided scheduling does with equal
/// weights: evenly, the first members taking the remainder.
pub fn divide(replicas: i32, clusters: usize) -> Vec<i32> {
    let Ok(n) = i32::try_from(clusters) else {
        return Vec::new();
    };
    if n == 0 {
        return Vec::new();
    }
    (0..n)
        .map(|i| replicas / n + i32::from(i < replicas % n))
        .collect()
}

/// Sample Deployment `name` with `replicas`.
pub fn deployment(name: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": name, "image": "nginx:1.27"}]}
            }
        }
    })
}

/// The sample ConfigMap.
pub fn config_map() -> Value {
    json!({
        "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
        "data": {"greeting": "hello from Kairship"}
    })
}

/// The PropagationPolicy selecting the Deployments and the ConfigMap onto `members`.
pub fn policy(members: &[&str]) -> Value {
    let mut selectors: Vec<Value> = DEPLOYMENTS
        .iter()
        .map(|(name, _)| json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": name}))
        .collect();
    selectors.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": CONFIG_MAP}));
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": POLICY, "namespace": NAMESPACE},
        "spec": {
            "resourceSelectors": selectors,
            "placement": {
                "clusterAffinity": {"clusterNames": members},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted"
                }
            }
        }
    })
}

/// The ResourceBinding of Deployment `name` with `replicas` divided over `members`, without
/// status.
pub fn binding(name: &str, replicas: i32, members: &[&str]) -> Value {
    let clusters: Vec<Value> = members
        .iter()
        .zip(divide(replicas, members.len()))
        .map(|(member, n)| json!({"name": member, "replicas": n}))
        .collect();
    json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {
            "name": deployment_binding_name(name),
            "namespace": NAMESPACE,
            "annotations": {
                PROPAGATION_POLICY_NAME_KEY: POLICY,
                PROPAGATION_POLICY_NAMESPACE_KEY: NAMESPACE
            }
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": NAMESPACE},
            "replicas": replicas,
            "clusters": clusters
        }
    })
}

/// The binding's status: every member applied it and reports all its replicas ready.
pub fn binding_status(replicas: i32, members: &[&str]) -> Value {
    let items: Vec<Value> = members
        .iter()
        .zip(divide(replicas, members.len()))
        .map(|(member, n)| {
            json!({
                "clusterName": member, "applied": true, "health": "Healthy",
                "status": {"replicas": n, "readyReplicas": n, "availableReplicas": n, "updatedReplicas": n}
            })
        })
        .collect();
    json!({"aggregatedStatus": items})
}

fn object<T: serde::de::DeserializeOwned>(value: Value) -> anyhow::Result<T> {
    serde_json::from_value(value).context("building a sample object")
}

/// Creates the sample objects in an instance whose ready members are `members`.
pub async fn create(client: &Client, instance: &str, members: &[&str]) -> anyhow::Result<()> {
    let pp = PostParams::default();
    let what = |object: &str| format!("creating {object} in {instance}");
    Api::<Namespace>::all(client.clone())
        .create(&pp, &object(json!({"metadata": {"name": NAMESPACE}}))?)
        .await
        .with_context(|| what("the sample namespace"))?;
    Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .create(&pp, &object(config_map())?)
        .await
        .with_context(|| what("the sample ConfigMap"))?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    for (name, replicas) in DEPLOYMENTS {
        deployments
            .create(&pp, &object(deployment(name, replicas))?)
            .await
            .with_context(|| what(&format!("Deployment {name}")))?;
    }
    let policies: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
            "propagationpolicies",
        ),
    );
    policies
        .create(&pp, &object(policy(members))?)
        .await
        .with_context(|| what("the sample PropagationPolicy"))?;
    let bindings: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &resource_bindings_resource());
    for (name, replicas) in DEPLOYMENTS {
        let mut created = bindings
            .create(&pp, &object(binding(name, replicas, members))?)
            .await
            .with_context(|| what(&format!("the ResourceBinding of {name}")))?;
        created.data["status"] = binding_status(replicas, members);
        bindings
            .replace_status(&deployment_binding_name(name), &pp, &created)
            .await
            .with_context(|| what(&format!("the status of the ResourceBinding of {name}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_are_divided_evenly_first_members_first() {
        assert_eq!(divide(3, 2), [2, 1]);
        assert_eq!(divide(2, 3), [1, 1, 0]);
        assert_eq!(divide(4, 2), [2, 2]);
        assert!(divide(3, 0).is_empty());
    }

    #[test]
    fn bindings_name_the_policy_and_every_member() {
        let b = binding("web", 3, &["east", "west"]);
        assert_eq!(b["metadata"]["name"], "web-deployment");
        assert_eq!(
            b["metadata"]["annotations"][PROPAGATION_POLICY_NAME_KEY],
            POLICY
        );
        assert_eq!(
            b["spec"]["clusters"][1],
            json!({"name": "west", "replicas": 1})
        );
        let s = binding_status(3, &["east", "west"]);
        assert_eq!(s["aggregatedStatus"][0]["status"]["readyReplicas"], 2);
        let p = policy(&["east"]);
        assert_eq!(
            p["spec"]["resourceSelectors"].as_array().map(Vec::len),
            Some(3)
        );
    }
}
