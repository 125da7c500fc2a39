//! A controller reacting to Kairship Instances: an inventory ConfigMap per Instance.
//!
//! Kairship's `Instance` (`kairship.io/v1alpha1`, cluster-scoped, on the host cluster) is a
//! typed kube-rs resource in `kairship_core::instance`, so one's own controllers can watch it
//! like any other kind. This one keeps `kairship-inventory/<instance>` in step with each
//! Instance (mode, alias, health state, Kubernetes version), owned by the Instance so that
//! Kubernetes' garbage collector deletes it with the Instance. A CMDB exporter, a billing
//! job or an alert router would start from the same few lines.
//!
//! Against a host cluster: `instance_inventory --kubeconfig host.yaml`.
//!
//! Without one: `instance_inventory --sandbox` starts a sandbox host with Kairship's CRDs,
//! creates two Instances, writes a status as Kairship's controller-manager would (it is not
//! run here: it would need Karmada instances), deletes an Instance, prints what the inventory
//! held at each step and exits.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kairship_core::instance::{
    DeletionPolicy, Instance, InstanceMode, InstanceSpec, SecretKeyReference,
};
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Namespace of the inventory ConfigMaps.
const NAMESPACE: &str = "kairship-inventory";
/// Field manager of the inventory's server-side apply.
const MANAGER: &str = "instance-inventory";

#[derive(Parser, Debug)]
#[command(about = "Keeps an inventory ConfigMap per Kairship Instance")]
struct Cli {
    /// Run against an in-process sandbox host, show each step and exit.
    #[arg(long)]
    sandbox: bool,

    #[command(flatten)]
    common: kube_kit::Args,
}

#[derive(Debug, thiserror::Error)]
enum InventoryError {
    #[error("Instance {0} has no uid yet")]
    NoUid(String),
    #[error("writing the inventory of {name}: {source}")]
    Write {
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// The inventory entry of `instance`: what it is and how it is, owned by it.
fn inventory(instance: &Instance) -> Result<ConfigMap, InventoryError> {
    let name = instance.name_any();
    let owner = instance
        .controller_owner_ref(&())
        .ok_or_else(|| InventoryError::NoUid(name.clone()))?;
    let status = instance.status.clone().unwrap_or_default();
    let mode = match instance.spec.mode {
        InstanceMode::Adopt => "Adopt",
        InstanceMode::Provision => "Provision",
    };
    let data = BTreeMap::from([
        ("mode".to_owned(), mode.to_owned()),
        (
            "alias".to_owned(),
            instance.spec.alias.clone().unwrap_or_default(),
        ),
        ("state".to_owned(), status.state.to_string()),
        (
            "kubernetesVersion".to_owned(),
            status.kubernetes_version.unwrap_or_default(),
        ),
    ]);
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: Some(NAMESPACE.to_owned()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    })
}

async fn reconcile(instance: Arc<Instance>, client: Arc<Client>) -> Result<Action, InventoryError> {
    let entry = inventory(&instance)?;
    let name = instance.name_any();
    Api::<ConfigMap>::namespaced((*client).clone(), NAMESPACE)
        .patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&entry),
        )
        .await
        .map_err(|source| InventoryError::Write { name, source })?;
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Instance>, error: &InventoryError, _: Arc<Client>) -> Action {
    tracing::warn!(%error, "inventory update failed; retrying");
    Action::requeue(Duration::from_secs(1))
}

/// Runs the controller until `stop` is cancelled.
async fn run(client: Client, stop: CancellationToken) {
    Controller::new(
        Api::<Instance>::all(client.clone()),
        watcher::Config::default(),
    )
    .graceful_shutdown_on(async move { stop.cancelled().await })
    .run(reconcile, error_policy, Arc::new(client))
    .for_each(|_| async {})
    .await;
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    kube_kit::telemetry::init(&cli.common.log_options()).context("logging")?;
    if cli.sandbox {
        return demo().await;
    }
    let options = cli.common.client_options(kube_kit::client::user_agent(
        "instance-inventory",
        env!("CARGO_PKG_VERSION"),
    ));
    let client = cli.common.client(&options).await?;
    run(client, kube_kit::shutdown::signal_token()?).await;
    Ok(())
}

/// An Adopt-mode Instance whose kubeconfig would be in `kairship-system/<name>-kubeconfig`.
fn adopted(name: &str, alias: &str) -> Instance {
    let mut instance = Instance::new(
        name,
        InstanceSpec {
            mode: InstanceMode::Adopt,
            kubeconfig_secret_ref: Some(SecretKeyReference {
                namespace: "kairship-system".into(),
                name: format!("{name}-kubeconfig"),
                key: None,
            }),
            provision: None,
            alias: Some(alias.into()),
            deletion_policy: DeletionPolicy::Retain,
        },
    );
    instance.metadata.labels = Some(BTreeMap::from([("team".into(), "platform".into())]));
    instance
}

/// The inventory entry of `name` (its data), once it satisfies `done`; fails after 30 s.
async fn entry_when(
    inventory: &Api<ConfigMap>,
    name: &str,
    done: impl Fn(Option<&BTreeMap<String, String>>) -> bool,
) -> anyhow::Result<Option<BTreeMap<String, String>>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let data = inventory
            .get_opt(name)
            .await?
            .map(|cm| cm.data.unwrap_or_default());
        if done(data.as_ref()) {
            return Ok(data);
        }
        ensure!(
            Instant::now() < deadline,
            "inventory entry {name}: timed out, last {data:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn demo() -> anyhow::Result<()> {
    let host = kube_sandbox::Cluster::new("host");
    let client = host.client();
    let crds = Api::all(client.clone());
    for crd in kairship_core::crds() {
        crds.create(&PostParams::default(), &crd).await?;
    }
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await?;
    let stop = CancellationToken::new();
    let controller = tokio::spawn(run(client.clone(), stop.clone()));

    let instances: Api<Instance> = Api::all(client.clone());
    for (name, alias) in [("prod", "Production"), ("staging", "Staging")] {
        instances
            .create(&PostParams::default(), &adopted(name, alias))
            .await?;
    }
    let inventory: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    for name in ["prod", "staging"] {
        let data = entry_when(&inventory, name, |d| d.is_some()).await?;
        println!("inventory {name}: {data:?}");
    }
    println!("proved: each Instance got its inventory entry (mode, alias, state UNKNOWN)");

    // What Kairship's controller-manager writes once the instance answers its probes.
    let status = json!({"status": {"state": "RUNNING", "controlPlaneReady": true,
        "kubernetesVersion": "v1.31.3", "consecutiveProbeFailures": 0}});
    instances
        .patch_status("prod", &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    let data = entry_when(&inventory, "prod", |d| {
        d.and_then(|d| d.get("state")).map(String::as_str) == Some("RUNNING")
    })
    .await?;
    println!("inventory prod: {data:?}");
    println!("proved: a status change of the Instance reached its entry");

    instances
        .delete("staging", &DeleteParams::default())
        .await?;
    entry_when(&inventory, "staging", |d| d.is_none()).await?;
    println!(
        "proved: deleting Instance staging deleted its entry (owner reference, garbage collection)"
    );

    stop.cancel();
    controller.await.context("the controller task")?;
    host.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_entry_is_owned_by_the_instance_and_says_its_state() {
        let mut instance = adopted("prod", "Production");
        assert!(matches!(
            inventory(&instance),
            Err(InventoryError::NoUid(_))
        ));
        instance.metadata.uid = Some("u-1".into());
        let entry = inventory(&instance).unwrap();
        let owner = &entry.metadata.owner_references.unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("Instance", "u-1")
        );
        let data = entry.data.unwrap();
        assert_eq!(data["state"], "UNKNOWN");
        assert_eq!(data["alias"], "Production");
        assert_eq!(data["mode"], "Adopt");
    }
}
