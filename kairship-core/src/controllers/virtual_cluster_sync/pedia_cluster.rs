//! The read-backend registration of an instance (virtual-cluster-sync): with Clusterpedia,
//! a `PediaCluster` named `kairship-<instance>` that reads the instance's control plane
//! through a kubeconfig Secret in Clusterpedia's namespace.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::instance::{DEFAULT_KUBECONFIG_KEY, INSTANCE_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::models::pedia::{
    AuthenticationFrom, ClusterGroupResources, PediaCluster, PediaClusterSpec, SecretKeyRef,
};
use crate::models::{ObjectCondition, find_condition};
use crate::naming::{pedia_cluster_name, pedia_kubeconfig_secret_name};

/// The resources Kairship reads through the read backend: the workloads, config and
/// Karmada policies and bindings the API serves, each in the one version Karmada v1.19 stores
/// (with no version named, Clusterpedia stores every served version: ResourceBindings twice).
/// Secrets are left out: their reads go to the instance, and no credentials of an instance
/// are copied into Clusterpedia's storage.
pub fn default_sync_resources() -> Vec<ClusterGroupResources> {
    let group = |group: &str, version: &str, resources: &[&str]| ClusterGroupResources {
        group: group.to_owned(),
        versions: vec![version.to_owned()],
        resources: resources.iter().map(|r| (*r).to_owned()).collect(),
        extra: BTreeMap::new(),
    };
    vec![
        group(
            "",
            "v1",
            &[
                "namespaces",
                "services",
                "configmaps",
                "persistentvolumeclaims",
            ],
        ),
        group("apps", "v1", &["deployments"]),
        group("batch", "v1", &["jobs", "cronjobs"]),
        group(
            "policy.karmada.io",
            "v1alpha1",
            &[
                "propagationpolicies",
                "clusterpropagationpolicies",
                "overridepolicies",
                "clusteroverridepolicies",
            ],
        ),
        group(
            "work.karmada.io",
            "v1alpha2",
            &["resourcebindings", "clusterresourcebindings"],
        ),
        group("cluster.karmada.io", "v1alpha1", &["clusters"]),
    ]
}

/// Instance annotation asking Clusterpedia to sync the instance's Secrets too (`"true"`).
pub const SYNC_SECRETS_ANNOTATION: &str = "kairship.io/clusterpedia-sync-secrets";

/// The resources synced for an instance with `annotations`: [`default_sync_resources`], plus
/// core `secrets` when [`SYNC_SECRETS_ANNOTATION`] is `"true"`.
pub fn sync_resources_for(
    annotations: Option<&BTreeMap<String, String>>,
) -> Vec<ClusterGroupResources> {
    let mut sync = default_sync_resources();
    let asked = annotations
        .and_then(|a| a.get(SYNC_SECRETS_ANNOTATION))
        .is_some_and(|v| v == "true");
    if asked && let Some(core) = sync.iter_mut().find(|g| g.group.is_empty()) {
        core.resources.push("secrets".to_owned());
    }
    sync
}

/// Condition reason on the Instance while Clusterpedia has said nothing of the PediaCluster.
pub const WAITING_FOR_CLUSTERPEDIA: &str = "WaitingForClusterpedia";
/// Condition reason on the Instance when the PediaCluster is Ready.
pub const PEDIA_CLUSTER_READY: &str = "PediaClusterReady";

/// What the Instance says of its PediaCluster: ready or not, a reason and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PediaReadiness {
    /// Clusterpedia reports the PediaCluster `Ready`.
    pub ready: bool,
    /// [`PEDIA_CLUSTER_READY`], [`WAITING_FOR_CLUSTERPEDIA`], or Clusterpedia's own reason of
    /// the condition that fails (e.g. `InvalidConfig`).
    pub reason: String,
    /// Which condition says what, in Clusterpedia's words.
    pub message: String,
}

/// The readiness of `cluster` as its status says: `Ready=True` is ready; otherwise the first
/// failing condition of `Validated`, `SynchroRunning`, `ClusterHealthy` and `Ready` (in the
/// order Clusterpedia sets them, `pkg/synchromanager/clustersynchro_manager.go`) gives its
/// reason and message, e.g. `Validated=False` / `InvalidConfig` when `authenticationFrom` needs
/// the `ClusterAuthenticationFromSecret` gate.
pub fn pedia_readiness(cluster: &PediaCluster) -> PediaReadiness {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let text = |c: &ObjectCondition| {
        let message = c.message.as_deref().unwrap_or_default();
        format!("PediaCluster {name} {}={}: {message}", c.type_, c.status)
    };
    if let Some(ready) = find_condition(conditions, "Ready").filter(|c| c.is_true()) {
        return PediaReadiness {
            ready: true,
            reason: PEDIA_CLUSTER_READY.to_owned(),
            message: text(ready),
        };
    }
    let failing = ["Validated", "SynchroRunning", "ClusterHealthy", "Ready"]
        .iter()
        .filter_map(|t| find_condition(conditions, t))
        .find(|c| c.status != "True");
    match failing {
        Some(c) => PediaReadiness {
            ready: false,
            reason: c
                .reason
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| WAITING_FOR_CLUSTERPEDIA.to_owned()),
            message: text(c),
        },
        None => PediaReadiness {
            ready: false,
            reason: WAITING_FOR_CLUSTERPEDIA.to_owned(),
            message: format!("Clusterpedia has not reported on PediaCluster {name} yet"),
        },
    }
}

/// The `PediaCluster` registering `instance`, reading its kubeconfig from the Secret
/// [`pedia_kubeconfig_secret_name`] (key [`DEFAULT_KUBECONFIG_KEY`]) in Clusterpedia's
/// namespace.
pub fn pedia_cluster(instance: &str, sync_resources: Vec<ClusterGroupResources>) -> PediaCluster {
    PediaCluster {
        metadata: ObjectMeta {
            name: Some(pedia_cluster_name(instance)),
            labels: Some(BTreeMap::from([
                (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
                (INSTANCE_LABEL.to_owned(), instance.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        spec: PediaClusterSpec {
            authentication_from: Some(AuthenticationFrom {
                kubeconfig: Some(SecretKeyRef {
                    name: pedia_kubeconfig_secret_name(instance),
                    key: DEFAULT_KUBECONFIG_KEY.to_owned(),
                    extra: BTreeMap::new(),
                }),
                extra: BTreeMap::new(),
            }),
            sync_resources,
            ..PediaClusterSpec::default()
        },
        status: None,
    }
}

/// Whether an existing PediaCluster's spec already has what `desired` asks for, so the
/// controller only writes on a real difference. Fields Clusterpedia or an operator added
/// (kept in `extra`) are ignored.
pub fn pedia_cluster_up_to_date(existing: &PediaCluster, desired: &PediaCluster) -> bool {
    existing
        .spec
        .authentication_from
        .as_ref()
        .and_then(|a| a.kubeconfig.as_ref())
        == desired
            .spec
            .authentication_from
            .as_ref()
            .and_then(|a| a.kubeconfig.as_ref())
        && existing.spec.sync_resources == desired.spec.sync_resources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pedia_cluster_shape() {
        let pc = pedia_cluster("prod", default_sync_resources());
        let json = serde_json::to_value(&pc).unwrap();
        assert_eq!(json["apiVersion"], "cluster.clusterpedia.io/v1alpha2");
        assert_eq!(json["kind"], "PediaCluster");
        assert_eq!(json["metadata"]["name"], "kairship-prod");
        assert_eq!(json["metadata"]["labels"]["kairship.io/instance"], "prod");
        assert_eq!(
            json["spec"]["authenticationFrom"]["kubeconfig"]["name"],
            "kairship-prod-kubeconfig"
        );
        assert_eq!(
            json["spec"]["authenticationFrom"]["kubeconfig"]["key"],
            "kubeconfig"
        );
        let groups: Vec<&str> = json["spec"]["syncResources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["group"].as_str().unwrap())
            .collect();
        assert!(
            groups.contains(&"apps")
                && groups.contains(&"policy.karmada.io")
                && groups.contains(&"")
        );
        assert!(
            json["spec"].get("kubeconfig").is_none(),
            "no inline credentials"
        );
    }

    #[test]
    fn secrets_are_synced_only_when_asked() {
        let has_secrets = |sync: &[ClusterGroupResources]| {
            sync.iter()
                .any(|g| g.group.is_empty() && g.resources.iter().any(|r| r == "secrets"))
        };
        for (value, want) in [(None, false), (Some("false"), false), (Some("true"), true)] {
            let annotations = value.map(|v: &str| {
                BTreeMap::from([(SYNC_SECRETS_ANNOTATION.to_owned(), v.to_owned())])
            });
            assert_eq!(
                has_secrets(&sync_resources_for(annotations.as_ref())),
                want,
                "{value:?}"
            );
        }
    }

    #[test]
    fn one_version_per_resource_and_no_secrets() {
        let sync = default_sync_resources();
        assert!(sync.iter().all(|g| g.versions.len() == 1), "{sync:?}");
        assert!(
            !sync
                .iter()
                .any(|g| g.resources.iter().any(|r| r == "secrets"))
        );
        let bindings = sync.iter().find(|g| g.group == "work.karmada.io").unwrap();
        assert_eq!(bindings.versions, ["v1alpha2"]);
    }

    fn with_conditions(conditions: &[(&str, &str, &str, &str)]) -> PediaCluster {
        let mut cluster = pedia_cluster("prod", default_sync_resources());
        cluster.status = Some(crate::models::pedia::PediaClusterStatus {
            conditions: conditions
                .iter()
                .map(|(type_, status, reason, message)| ObjectCondition {
                    type_: (*type_).into(),
                    status: (*status).into(),
                    reason: Some((*reason).into()),
                    message: Some((*message).into()),
                    ..ObjectCondition::default()
                })
                .collect(),
            ..Default::default()
        });
        cluster
    }

    #[test]
    fn readiness_mirrors_clusterpedias_conditions() {
        let gate = "invalid cluster config: cluster authentication secret listers is nil, perhaps you need to enable feature gate ClusterAuthenticationFromSecret";
        // (conditions, ready, reason, message contains)
        let cases: Vec<(PediaCluster, bool, &str, &str)> = vec![
            (
                pedia_cluster("prod", default_sync_resources()),
                false,
                WAITING_FOR_CLUSTERPEDIA,
                "has not reported",
            ),
            (
                with_conditions(&[
                    ("Validated", "False", "InvalidConfig", gate),
                    ("Ready", "False", "NotReady", "not ready"),
                ]),
                false,
                "InvalidConfig",
                "PediaCluster kairship-prod Validated=False: invalid cluster config",
            ),
            (
                with_conditions(&[
                    ("Validated", "True", "Validated", ""),
                    ("SynchroRunning", "False", "Pending", "waiting"),
                ]),
                false,
                "Pending",
                "SynchroRunning=False: waiting",
            ),
            (
                with_conditions(&[
                    ("Validated", "True", "Validated", ""),
                    ("SynchroRunning", "True", "Running", ""),
                    ("Ready", "True", "Ready", "cluster is ready"),
                ]),
                true,
                PEDIA_CLUSTER_READY,
                "Ready=True: cluster is ready",
            ),
        ];
        for (cluster, ready, reason, message) in cases {
            let got = pedia_readiness(&cluster);
            assert_eq!((got.ready, got.reason.as_str()), (ready, reason), "{got:?}");
            assert!(got.message.contains(message), "{got:?}");
        }
    }

    #[test]
    fn up_to_date_ignores_server_added_fields() {
        let desired = pedia_cluster("prod", default_sync_resources());
        let mut existing = desired.clone();
        existing
            .spec
            .extra
            .insert("shardingName".into(), serde_json::json!("shard-a"));
        existing.metadata.resource_version = Some("42".into());
        assert!(pedia_cluster_up_to_date(&existing, &desired));
        existing.spec.sync_resources.pop();
        assert!(!pedia_cluster_up_to_date(&existing, &desired));
        let other = pedia_cluster("other", default_sync_resources());
        assert!(!pedia_cluster_up_to_date(&other, &desired));
    }
}
