//! The member clusters of the sandbox's Karmada instances: each one a kube-sandbox cluster of
//! its own (simulated nodes, the workload controllers), served over loopback and registered in
//! its instance as Karmada's Push mode registers a member: a `Cluster` with `apiEndpoint`, a
//! `secretRef` Secret (the member's token and CA bundle) and an `impersonatorSecretRef` Secret
//! (the token of a service account that may only impersonate), both in `karmada-cluster`. The
//! instance serves Karmada's cluster proxy through them
//! (`kairship_core::karmada_sim::cluster_proxy`). The sample workloads are applied into the
//! members they are placed on, with the replicas their bindings give each member, standing in
//! for Karmada's propagation.

use std::collections::BTreeMap;

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kairship_core::api::members::objects::{impersonated_subjects, impersonator_rules};
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::{ServeOptions, Served, SimNode, UserInfo};
use serde_json::{Value, json};

use super::samples;
use super::users::random_token;

/// Namespace of the members' Secrets in an instance, as `karmadactl join` uses.
pub const SECRET_NAMESPACE: &str = "karmada-cluster";
/// The service account Karmada impersonates callers with, in each member.
const IMPERSONATOR: &str = "karmada-impersonator";
/// A Deployment of a member that Karmada does not manage: what `:promote` takes over.
pub const LEGACY_DEPLOYMENT: &str = "legacy";
/// The ConfigMap the legacy Deployment mounts.
pub const LEGACY_CONFIG_MAP: &str = "legacy-config";

/// One running member cluster.
pub struct Member {
    /// The member's sandbox cluster.
    pub cluster: kube_sandbox::Cluster,
    /// Where it is served.
    pub served: Served,
    /// The impersonator's token.
    impersonator_token: String,
}

/// Splits a total cpu (`12`, `7500m`) over `nodes` nodes, in millicores.
fn per_node_cpu(total: &str, nodes: i32) -> String {
    let milli = match total.strip_suffix('m') {
        Some(m) => m.parse::<i64>().unwrap_or(4000),
        None => total.parse::<i64>().map(|c| c * 1000).unwrap_or(4000),
    };
    format!("{}m", milli / i64::from(nodes.max(1)))
}

/// Splits a total memory (`48Gi`) over `nodes` nodes, in Mi.
fn per_node_memory(total: &str, nodes: i32) -> String {
    let mib = total
        .strip_suffix("Gi")
        .and_then(|g| g.parse::<i64>().ok())
        .map_or(16 * 1024, |g| g * 1024);
    format!("{}Mi", mib / i64::from(nodes.max(1)))
}

/// Starts member `name` with `nodes` simulated nodes sharing `cpu` and `memory`, served with
/// `serve`; a member that is not `ready` has its nodes' kubelets stopped.
pub async fn start(
    name: &str,
    ready: bool,
    nodes: i32,
    cpu: &str,
    memory: &str,
    serve: &ServeOptions,
) -> anyhow::Result<Member> {
    let cluster = kube_sandbox::Cluster::with_options(
        name,
        kube_sandbox::ClusterOptions {
            workload_controllers: true,
            ..kube_sandbox::ClusterOptions::default()
        },
    );
    for i in 1..=nodes {
        let node = SimNode::new(
            &format!("{name}-node-{i}"),
            &per_node_cpu(cpu, nodes),
            &per_node_memory(memory, nodes),
        );
        cluster
            .add_node(&node)
            .map_err(|e| anyhow::anyhow!("adding a node to member {name}: {}", e.message))?;
        if !ready {
            cluster.stop_node(&node.name);
        }
    }
    // Karmada marks a member whose API server is not healthy NotReady.
    cluster.faults().set_storage_unhealthy(!ready);
    let client = cluster.client();
    let user = format!("system:serviceaccount:{SECRET_NAMESPACE}:{IMPERSONATOR}");
    let impersonator_token = random_token()?;
    cluster.auth().add_token(
        &impersonator_token,
        UserInfo::new(&user, &["system:serviceaccounts"]),
    );
    // The impersonator may impersonate and nothing else, and nobody until
    // `limit_impersonator` names the callers it acts for: the member's RBAC decides for them.
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": IMPERSONATOR},
        "rules": impersonator_rules(&[])
    }))?;
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": IMPERSONATOR},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": IMPERSONATOR},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    }))?;
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await
        .with_context(|| format!("creating the impersonator's role in member {name}"))?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .with_context(|| format!("binding the impersonator's role in member {name}"))?;
    let served = cluster.serve(serve.clone()).await?;
    Ok(Member {
        cluster,
        served,
        impersonator_token,
    })
}

/// Lets the member's impersonator act for exactly the subjects that hold the member's cluster
/// proxy in `instance`, as Karmada's unified-auth controller does (never `system:masters`).
pub async fn limit_impersonator(instance: &Client, member: &Member) -> anyhow::Result<()> {
    let name = member.cluster.name();
    let roles = Api::<ClusterRole>::all(instance.clone())
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing the ClusterRoles of the instance of {name}"))?;
    let bindings = Api::<ClusterRoleBinding>::all(instance.clone())
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing the ClusterRoleBindings of the instance of {name}"))?;
    let roles: Vec<Value> = roles
        .items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let bindings: Vec<Value> = bindings
        .items
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    let rules = impersonator_rules(&impersonated_subjects(name, &roles, &bindings));
    Api::<ClusterRole>::all(member.cluster.client())
        .patch(
            IMPERSONATOR,
            &PatchParams::default(),
            &Patch::Merge(json!({"rules": rules})),
        )
        .await
        .with_context(|| format!("limiting the impersonator of member {name}"))?;
    Ok(())
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(SECRET_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Secret::default()
    }
}

/// Writes the member's Secrets into the instance and returns the `spec` of its Cluster.
pub async fn register(instance: &Client, member: &Member) -> anyhow::Result<serde_json::Value> {
    let name = member.cluster.name();
    let namespaces: Api<Namespace> = Api::all(instance.clone());
    if namespaces.get_opt(SECRET_NAMESPACE).await?.is_none() {
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": SECRET_NAMESPACE}}))?,
            )
            .await
            .context("creating the karmada-cluster namespace")?;
    }
    let secrets: Api<Secret> = Api::namespaced(instance.clone(), SECRET_NAMESPACE);
    let ca = member
        .served
        .ca_pem
        .clone()
        .unwrap_or_else(|| member.served.cluster_ca_pem().to_owned());
    let impersonator = format!("{name}-impersonator");
    for object in [
        secret(
            name,
            &[("token", member.cluster.admin_token()), ("caBundle", &ca)],
        ),
        secret(&impersonator, &[("token", &member.impersonator_token)]),
    ] {
        secrets
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating the Secrets of member {name}"))?;
    }
    Ok(json!({
        "syncMode": "Push",
        "apiEndpoint": member.served.url,
        "secretRef": {"namespace": SECRET_NAMESPACE, "name": name},
        "impersonatorSecretRef": {"namespace": SECRET_NAMESPACE, "name": impersonator},
    }))
}

async fn create_or_keep<K>(api: &Api<K>, object: &K) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A Deployment and its ConfigMap that exist in a member only (made there before Karmada):
/// what `:promote` brings into the instance.
pub async fn create_legacy(member: &Client) -> anyhow::Result<()> {
    let ns = samples::NAMESPACE;
    // The namespace comes from Karmada's namespace sync; a namespace made here first would
    // be one Karmada does not manage, and its Work would fail.
    let namespaces: Api<Namespace> = Api::all(member.clone());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while namespaces.get_opt(ns).await?.is_none() {
        if tokio::time::Instant::now() > deadline {
            anyhow::bail!("Karmada did not propagate the namespace {ns} to the member");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    create_or_keep(
        &Api::<ConfigMap>::namespaced(member.clone(), ns),
        &serde_json::from_value(json!({
            "metadata": {"name": LEGACY_CONFIG_MAP, "namespace": ns},
            "data": {"mode": "legacy"}
        }))?,
    )
    .await?;
    let mut object = samples::deployment(LEGACY_DEPLOYMENT, 1);
    object["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "config", "configMap": {"name": LEGACY_CONFIG_MAP}}]);
    create_or_keep(
        &Api::<Deployment>::namespaced(member.clone(), ns),
        &serde_json::from_value(object)?,
    )
    .await
    .context("creating the legacy Deployment")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_shared_by_the_nodes() {
        assert_eq!(per_node_cpu("12", 3), "4000m");
        assert_eq!(per_node_cpu("7500m", 2), "3750m");
        assert_eq!(per_node_memory("48Gi", 3), "16384Mi");
        assert_eq!(per_node_memory("30Gi", 2), "15360Mi");
    }
}
