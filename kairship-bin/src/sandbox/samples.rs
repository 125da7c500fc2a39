//! What the sandbox puts into each Karmada instance: a namespace, a ConfigMap, two Deployments
//! and a PropagationPolicy placing them on the ready members. The instance's emulated Karmada
//! (`karmada_sim::propagation`) binds, schedules and propagates them as Karmada would.

use anyhow::Context as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_selects_every_sample_onto_the_members() {
        let p = policy(&["east", "west"]);
        assert_eq!(
            p["spec"]["resourceSelectors"].as_array().map(Vec::len),
            Some(3)
        );
        assert_eq!(
            p["spec"]["placement"]["clusterAffinity"]["clusterNames"],
            json!(["east", "west"])
        );
        assert_eq!(deployment("web", 3)["spec"]["replicas"], 3);
    }
}
