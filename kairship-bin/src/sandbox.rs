//! `kairship sandbox`: a host sandbox cluster and two Karmada-instance sandbox clusters (with
//! Karmada's resource types and member `Cluster` objects whose status carries node and
//! resource summaries), Instances in Adopt mode pointing at them, and the controller-manager
//! in-process. Prints the kubeconfigs and the Instances' status, then runs until interrupted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kairship_core::controllers::{Context, ControllerConfig, NoopRegistry};
use kairship_core::instance::{
    DeletionPolicy, Instance, InstanceMode, InstanceSpec, InstanceState, SecretKeyReference,
};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kube_kit::admin::Metrics;
use kube_sandbox::{ServeOptions, Served};
use serde_json::json;

/// Namespace of the instances' kubeconfig Secrets on the host.
const NAMESPACE: &str = "kairship-system";

/// Flags of `kairship sandbox`.
#[derive(clap::Args, Debug)]
pub struct SandboxArgs {
    /// Directory the kubeconfigs are written to.
    #[arg(long, default_value = "kairship-sandbox")]
    dir: PathBuf,
    /// Serve the clusters over HTTPS.
    #[arg(long)]
    tls: bool,
}

/// A CRD that accepts any content: enough for the sandbox, which only stores and counts.
fn open_crd(
    group: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
) -> anyhow::Result<CustomResourceDefinition> {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": if namespaced { "Namespaced" } else { "Cluster" },
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    Ok(serde_json::from_value(crd)?)
}

async fn create_crds(client: &Client, crds: Vec<CustomResourceDefinition>) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        api.create(&PostParams::default(), &crd)
            .await
            .context("creating a CRD in the sandbox")?;
    }
    Ok(())
}

/// One Karmada instance: its resource types and `members` (name, ready, nodes, cpu, memory).
async fn karmada_instance(
    name: &str,
    members: &[(&str, bool, i32, &str, &str)],
    options: &ServeOptions,
) -> anyhow::Result<(kube_sandbox::Cluster, Served)> {
    let cluster = kube_sandbox::Cluster::new(name);
    let client = cluster.client();
    create_crds(
        &client,
        vec![
            open_crd("cluster.karmada.io", "Cluster", "clusters", false)?,
            open_crd(
                "policy.karmada.io",
                "PropagationPolicy",
                "propagationpolicies",
                true,
            )?,
            open_crd(
                "policy.karmada.io",
                "ClusterPropagationPolicy",
                "clusterpropagationpolicies",
                false,
            )?,
            open_crd(
                "policy.karmada.io",
                "OverridePolicy",
                "overridepolicies",
                true,
            )?,
            open_crd(
                "policy.karmada.io",
                "ClusterOverridePolicy",
                "clusteroverridepolicies",
                false,
            )?,
        ],
    )
    .await?;
    let clusters: Api<kairship_core::models::cluster::Cluster> = Api::all(client.clone());
    for (member, ready, nodes, cpu, memory) in members {
        let created = clusters
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    json!({"metadata": {"name": member}, "spec": {"syncMode": "Push"}}),
                )?,
            )
            .await
            .with_context(|| format!("creating member {member} in {name}"))?;
        let mut with_status = created;
        with_status.status = Some(serde_json::from_value(json!({
            "kubernetesVersion": "v1.31.2",
            "conditions": [{"type": "Ready", "status": if *ready { "True" } else { "False" }}],
            "nodeSummary": {"totalNum": nodes, "readyNum": if *ready { *nodes } else { 0 }},
            "resourceSummary": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": (nodes * 110).to_string()},
                "allocated": {"cpu": "500m", "memory": "1Gi"}
            }
        }))?);
        clusters
            .replace_status(member, &PostParams::default(), &with_status)
            .await
            .with_context(|| format!("setting the status of member {member} in {name}"))?;
    }
    let served = cluster.serve(options.clone()).await?;
    Ok((cluster, served))
}

/// Runs the sandbox until SIGTERM/SIGINT.
pub async fn run(args: SandboxArgs) -> anyhow::Result<()> {
    let shutdown = kube_kit::shutdown::signal_token()?;
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let options = |name: &str| ServeOptions {
        tls: args.tls,
        kubeconfig_path: Some(args.dir.join(format!("{name}.kubeconfig"))),
        ..ServeOptions::default()
    };
    let host = kube_sandbox::Cluster::new("host");
    let hc = host.client();
    create_crds(&hc, kairship_core::crds()).await?;
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(hc.clone())
        .create(&PostParams::default(), &ns)
        .await
        .context("creating the kairship-system namespace")?;
    let host_served = host.serve(options("host")).await?;

    let instances = [
        (
            "karmada-a",
            vec![
                ("a-east", true, 3, "12", "48Gi"),
                ("a-west", true, 2, "8", "32Gi"),
            ],
        ),
        (
            "karmada-b",
            vec![
                ("b-1", true, 5, "40", "160Gi"),
                ("b-2", false, 1, "4", "16Gi"),
                ("b-3", true, 2, "7500m", "30Gi"),
            ],
        ),
    ];
    let mut running = Vec::new();
    let secrets: Api<Secret> = Api::namespaced(hc.clone(), NAMESPACE);
    let instance_api: Api<Instance> = Api::all(hc.clone());
    for (name, members) in &instances {
        let (cluster, served) = karmada_instance(name, members, &options(name)).await?;
        let secret_name = format!("{name}-kubeconfig");
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(secret_name.clone()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(
                "kubeconfig".to_owned(),
                ByteString(served.kubeconfig_yaml.clone().into_bytes()),
            )])),
            ..Secret::default()
        };
        secrets.create(&PostParams::default(), &secret).await?;
        let instance = Instance::new(
            name,
            InstanceSpec {
                mode: InstanceMode::Adopt,
                kubeconfig_secret_ref: Some(SecretKeyReference {
                    namespace: NAMESPACE.into(),
                    name: secret_name,
                    key: "kubeconfig".into(),
                }),
                provision: None,
                alias: None,
                deletion_policy: DeletionPolicy::Retain,
            },
        );
        instance_api
            .create(&PostParams::default(), &instance)
            .await?;
        running.push((cluster, served));
    }

    let config = ControllerConfig {
        probe_interval: Duration::from_secs(2),
        ..ControllerConfig::default()
    };
    let ctx = Context::new(hc.clone(), config, Arc::new(NoopRegistry), &Metrics::new());
    let controllers = tokio::spawn(kairship_core::controllers::run(ctx, shutdown.clone()));

    // Show the Instances once both are running with a summary (or after 30 s regardless).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = instance_api.list(&Default::default()).await?;
        let done = list.items.iter().all(|i| {
            i.status
                .as_ref()
                .is_some_and(|s| s.state == InstanceState::Running && s.summary.is_some())
        });
        if done || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "host:      {}",
        host_served
            .kubeconfig_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    for (cluster, served) in &running {
        let path = served
            .kubeconfig_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        println!("{}: {path}", cluster.name());
    }
    for instance in instance_api.list(&Default::default()).await?.items {
        let status = serde_json::json!({
            "name": instance.metadata.name,
            "status": instance.status,
        });
        print!("---\n{}", serde_saphyr::to_string(&status)?);
    }
    println!("--- running; Ctrl-C to stop");
    shutdown.cancelled().await;
    controllers.await.context("controller task")?;
    host.shutdown();
    for (cluster, _) in &running {
        cluster.shutdown();
    }
    Ok(())
}
