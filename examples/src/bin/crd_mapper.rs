//! A custom `ResourceMapper` for a CRD kind: FeatureFlags of the computing cluster copied into
//! a worker cluster the way Kubeocean copies ConfigMaps and Secrets.
//!
//! Kubeocean's top-down half maps each kind it copies with a `ResourceMapper<K>` (the name of
//! the physical copy, the copy itself, and what status flows back up), all pure functions; the
//! reconcilers only read both clusters, call the mapper and write the difference. A kind of
//! one's own follows the same contract and reuses Kubeocean's naming
//! (`naming::physical_name`), its managed-by label (`physical_labels`), its back-reference
//! annotations and its ownership check (`ownership`), so copies look like Kubeocean's and a
//! name collision with an object someone else made is reported, never overwritten.
//!
//! `FlagMapper` maps `flags.example.com/v1` FeatureFlags into the binding's mount namespace;
//! the status a worker-side operator writes on the copy (here `served` and `servedBy`) flows
//! back up to the virtual flag. A small kube-rs controller runs it: it watches the virtual
//! flags in the computing cluster and the copies in the worker.
//!
//! `cargo run -p examples --bin crd_mapper` runs it against a computing and a worker sandbox
//! cluster: a flag is copied, a spec change follows, the worker's status comes back up, and a
//! flag whose physical name is taken by an unowned object reports the conflict. (A real
//! mapper would also hold a finalizer on the virtual flag to delete its copy, as
//! `examples::replicator` does.)

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, CustomResource, CustomResourceExt, ResourceExt};
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::topdown::mapping::{
    BindingSettings, MapError, MappingContext, Ownership, ResourceMapper, VIRTUAL_NAME,
    VIRTUAL_NAMESPACE, VIRTUAL_UID, back_reference, ownership, physical_labels,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The worker namespace that receives the copies (the binding's `mountNamespace`).
const MOUNT_NAMESPACE: &str = "kubeocean-worker";

/// A feature flag: on or off, for a share of the traffic.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "flags.example.com",
    version = "v1",
    kind = "FeatureFlag",
    namespaced,
    status = "FeatureFlagStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct FeatureFlagSpec {
    /// Whether the flag is on.
    pub enabled: bool,
    /// Share of the traffic it applies to, 0 to 100.
    pub rollout_percent: u8,
}

/// What the worker reports (up from the copy), and what the mapping found (on the virtual flag).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeatureFlagStatus {
    /// The worker's flag service serves the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<bool>,
    /// Which flag service serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_by: Option<String>,
    /// Why the flag could not be copied (a name collision in the worker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
}

/// Maps FeatureFlags as Kubeocean maps ConfigMaps: same naming, labels and back-reference.
#[derive(Clone, Copy, Debug, Default)]
struct FlagMapper;

impl ResourceMapper<FeatureFlag> for FlagMapper {
    type Status = FeatureFlagStatus;

    fn physical_name(&self, flag: &FeatureFlag) -> Result<String, MapError> {
        let namespace = flag.metadata.namespace.as_deref().unwrap_or_default();
        match flag.metadata.name.as_deref() {
            Some(name) if !name.is_empty() => Ok(physical_name(namespace, name)),
            _ => Err(MapError::Unnamed {
                kind: "FeatureFlag",
                namespace: namespace.to_owned(),
            }),
        }
    }

    fn to_physical(
        &self,
        flag: &FeatureFlag,
        ctx: &MappingContext<'_>,
    ) -> Result<FeatureFlag, MapError> {
        let meta = &flag.metadata;
        let mut annotations = BTreeMap::from([
            (
                VIRTUAL_NAMESPACE.to_owned(),
                meta.namespace.clone().unwrap_or_default(),
            ),
            (
                VIRTUAL_NAME.to_owned(),
                meta.name.clone().unwrap_or_default(),
            ),
        ]);
        if let Some(uid) = meta.uid.clone() {
            annotations.insert(VIRTUAL_UID.to_owned(), uid);
        }
        Ok(FeatureFlag {
            metadata: ObjectMeta {
                name: Some(self.physical_name(flag)?),
                namespace: Some(ctx.binding.mount_namespace.clone()),
                labels: Some(physical_labels(meta)),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: flag.spec.clone(),
            status: None,
        })
    }

    fn status_to_virtual(
        &self,
        physical: &FeatureFlag,
        flag: &FeatureFlag,
    ) -> Option<FeatureFlagStatus> {
        let reported = physical.status.clone()?;
        let current = flag.status.clone().unwrap_or_default();
        let wanted = FeatureFlagStatus {
            conflict: None,
            ..reported
        };
        (wanted != current).then_some(wanted)
    }
}

#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error(transparent)]
    Map(#[from] MapError),
    #[error("{what}: {source}")]
    Kube {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
}

fn kube_error(what: &'static str) -> impl FnOnce(kube::Error) -> SyncError {
    move |source| SyncError::Kube { what, source }
}

/// The clusters and the binding.
struct Ctx {
    computing: Client,
    worker: Client,
    binding: BindingSettings,
}

/// One virtual flag: create or update its copy unless the name is someone else's, then bring
/// the copy's status up.
async fn reconcile(flag: Arc<FeatureFlag>, ctx: Arc<Ctx>) -> Result<Action, SyncError> {
    let desired = FlagMapper.to_physical(&flag, &MappingContext::new(&ctx.binding))?;
    let name = desired.name_any();
    let copies: Api<FeatureFlag> = Api::namespaced(ctx.worker.clone(), MOUNT_NAMESPACE);
    let virtual_flags: Api<FeatureFlag> = Api::namespaced(
        ctx.computing.clone(),
        flag.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let status = match copies.get_opt(&name).await.map_err(kube_error("reading the copy"))? {
        None => {
            copies
                .create(&PostParams::default(), &desired)
                .await
                .map_err(kube_error("creating the copy"))?;
            None
        }
        Some(existing) => match ownership(&existing.metadata, &flag.metadata) {
            Ownership::Ours => {
                if existing.spec != desired.spec
                    || existing.metadata.labels != desired.metadata.labels
                {
                    let patch = json!({"metadata": {"labels": desired.metadata.labels,
                        "annotations": desired.metadata.annotations}, "spec": desired.spec});
                    copies
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(kube_error("updating the copy"))?;
                }
                FlagMapper.status_to_virtual(&existing, &flag)
            }
            Ownership::Foreign(_) | Ownership::Unowned => Some(FeatureFlagStatus {
                conflict: Some(format!(
                    "{MOUNT_NAMESPACE}/{name} in the worker belongs to someone else; not overwritten"
                )),
                ..FeatureFlagStatus::default()
            })
            .filter(|wanted| flag.status.as_ref() != Some(wanted)),
        },
    };
    if let Some(status) = status {
        virtual_flags
            .patch_status(
                &flag.name_any(),
                &PatchParams::default(),
                // Every field named, so that a cleared one (`null`) is removed.
                &Patch::Merge(json!({ "status": {
                    "served": status.served,
                    "servedBy": status.served_by,
                    "conflict": status.conflict,
                }})),
            )
            .await
            .map_err(kube_error("writing the virtual flag's status"))?;
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn error_policy(_: Arc<FeatureFlag>, error: &SyncError, _: Arc<Ctx>) -> Action {
    tracing::warn!(%error, "mapping failed; retrying");
    Action::requeue(Duration::from_secs(1))
}

/// Runs the mapping until `stop`: virtual flags, and the copies (a copy's change reconciles
/// the virtual flag its back-reference names).
async fn run(ctx: Ctx, stop: CancellationToken) {
    let virtual_flags = Api::<FeatureFlag>::all(ctx.computing.clone());
    let copies = Api::<FeatureFlag>::namespaced(ctx.worker.clone(), MOUNT_NAMESPACE);
    Controller::new(virtual_flags, watcher::Config::default())
        .watches(copies, watcher::Config::default(), |copy| {
            let back = back_reference(&copy.metadata);
            Some(ObjectRef::new(&back.name?).within(&back.namespace?))
        })
        .graceful_shutdown_on(async move { stop.cancelled().await })
        .run(reconcile, error_policy, Arc::new(ctx))
        .for_each(|_| async {})
        .await;
}

/// Polls `check` every 25 ms for at most 30 s.
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = check().await? {
            return Ok(found);
        }
        ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn flag(name: &str, enabled: bool, percent: u8) -> FeatureFlag {
    let mut flag = FeatureFlag::new(
        name,
        FeatureFlagSpec {
            enabled,
            rollout_percent: percent,
        },
    );
    flag.metadata.labels = Some(BTreeMap::from([("team".into(), "checkout".into())]));
    flag
}

async fn namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let computing = kube_sandbox::Cluster::new("computing");
    let worker = kube_sandbox::Cluster::new("worker");
    let (c, w) = (computing.client(), worker.client());
    for client in [&c, &w] {
        Api::all(client.clone())
            .create(&PostParams::default(), &FeatureFlag::crd())
            .await
            .context("creating the FeatureFlag CRD")?;
    }
    namespace(&c, "apps").await?;
    namespace(&w, MOUNT_NAMESPACE).await?;
    let binding = BindingSettings {
        name: "worker-1".into(),
        cluster_id: "w1".into(),
        mount_namespace: MOUNT_NAMESPACE.into(),
        pod_priority_class_name: "kubeocean-default".into(),
        direct_scheduling: false,
        running_daemonset_by_default: false,
    };
    let stop = CancellationToken::new();
    let task = tokio::spawn(run(
        Ctx {
            computing: c.clone(),
            worker: w.clone(),
            binding,
        },
        stop.clone(),
    ));

    let flags: Api<FeatureFlag> = Api::namespaced(c.clone(), "apps");
    let copies: Api<FeatureFlag> = Api::namespaced(w.clone(), MOUNT_NAMESPACE);
    let created = flags
        .create(&PostParams::default(), &flag("new-checkout", true, 10))
        .await?;
    let physical = physical_name("apps", "new-checkout");
    let copy = wait_for("the copy", || async {
        Ok(copies.get_opt(&physical).await?)
    })
    .await?;
    let annotations = copy.metadata.annotations.clone().unwrap_or_default();
    ensure!(
        annotations.get(VIRTUAL_UID) == created.metadata.uid.as_ref(),
        "the copy does not point back at the virtual flag: {annotations:?}"
    );
    println!(
        "proved: apps/new-checkout was copied to {MOUNT_NAMESPACE}/{physical} with labels {:?}",
        copy.metadata.labels.unwrap_or_default()
    );

    flags
        .patch(
            "new-checkout",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rolloutPercent": 50}})),
        )
        .await?;
    wait_for("the spec change", || async {
        Ok(copies
            .get(&physical)
            .await?
            .spec
            .rollout_percent
            .eq(&50)
            .then_some(()))
    })
    .await?;
    println!("proved: rolloutPercent 10 -> 50 on the virtual flag reached the copy");

    // The worker's flag service reports on its copy.
    copies
        .patch_status(
            &physical,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"served": true, "servedBy": "flagd-7f9c"}})),
        )
        .await?;
    let status = wait_for("the status up", || async {
        Ok(flags
            .get("new-checkout")
            .await?
            .status
            .filter(|s| s.served == Some(true)))
    })
    .await?;
    println!("proved: the worker's status came back up: {status:?}");

    // Someone else's object at the physical name of another flag.
    let taken = physical_name("apps", "dark-mode");
    let mut squatter = flag("squatter", false, 0);
    squatter.metadata.name = Some(taken.clone());
    copies.create(&PostParams::default(), &squatter).await?;
    flags
        .create(&PostParams::default(), &flag("dark-mode", true, 100))
        .await?;
    let conflict = wait_for("the conflict", || async {
        Ok(flags
            .get("dark-mode")
            .await?
            .status
            .and_then(|s| s.conflict))
    })
    .await?;
    ensure!(
        !copies.get(&taken).await?.spec.enabled,
        "the unowned object was overwritten"
    );
    println!("proved: a taken physical name is reported and left alone: {conflict}");

    stop.cancel();
    task.await.context("the controller task")?;
    computing.shutdown();
    worker.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn binding() -> BindingSettings {
        BindingSettings {
            name: "b".into(),
            cluster_id: "c".into(),
            mount_namespace: MOUNT_NAMESPACE.into(),
            pod_priority_class_name: "kubeocean-default".into(),
            direct_scheduling: false,
            running_daemonset_by_default: false,
        }
    }

    #[test]
    fn a_copy_is_named_labelled_and_points_back_like_kubeoceans() {
        let mut virtual_flag = flag("f", true, 5);
        virtual_flag.metadata.namespace = Some("apps".into());
        virtual_flag.metadata.uid = Some("u-1".into());
        let binding = binding();
        let copy = FlagMapper
            .to_physical(&virtual_flag, &MappingContext::new(&binding))
            .unwrap();
        assert_eq!(copy.metadata.name, Some(physical_name("apps", "f")));
        assert_eq!(copy.metadata.namespace.as_deref(), Some(MOUNT_NAMESPACE));
        assert_eq!(copy.spec, virtual_flag.spec);
        assert_eq!(
            ownership(&copy.metadata, &virtual_flag.metadata),
            Ownership::Ours
        );
        let labels = copy.metadata.labels.unwrap();
        assert_eq!(labels["team"], "checkout");
        assert_eq!(labels[kubeocean_core::labels::MANAGED_BY], "kubeocean");

        virtual_flag.metadata.name = None;
        assert!(matches!(
            FlagMapper.physical_name(&virtual_flag),
            Err(MapError::Unnamed { .. })
        ));
    }

    #[test]
    fn status_flows_up_only_when_it_changed() {
        let mut physical = flag("p", true, 5);
        let mut virtual_flag = flag("f", true, 5);
        assert_eq!(FlagMapper.status_to_virtual(&physical, &virtual_flag), None);
        physical.status = Some(FeatureFlagStatus {
            served: Some(true),
            ..FeatureFlagStatus::default()
        });
        let up = FlagMapper
            .status_to_virtual(&physical, &virtual_flag)
            .unwrap();
        assert_eq!(up.served, Some(true));
        virtual_flag.status = Some(up);
        assert_eq!(FlagMapper.status_to_virtual(&physical, &virtual_flag), None);
    }
}
