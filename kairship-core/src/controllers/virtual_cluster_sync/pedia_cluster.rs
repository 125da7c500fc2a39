//! The read-backend registration of an instance (virtual-cluster-sync): with Clusterpedia,
//! a `PediaCluster` named `kairship-<instance>` that reads the instance's control plane
//! through a kubeconfig Secret in Clusterpedia's namespace.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::instance::{DEFAULT_KUBECONFIG_KEY, INSTANCE_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::models::pedia::{
    AuthenticationFrom, ClusterGroupResources, PediaCluster, PediaClusterSpec, SecretKeyRef,
};
use crate::naming::{pedia_cluster_name, pedia_kubeconfig_secret_name};

/// The resources Kairship reads through the read backend: the workloads, config and
/// Karmada policies and bindings the API serves.
pub fn default_sync_resources() -> Vec<ClusterGroupResources> {
    let group = |group: &str, resources: &[&str]| ClusterGroupResources {
        group: group.to_owned(),
        versions: Vec::new(),
        resources: resources.iter().map(|r| (*r).to_owned()).collect(),
        extra: BTreeMap::new(),
    };
    vec![
        group(
            "",
            &[
                "namespaces",
                "services",
                "configmaps",
                "secrets",
                "persistentvolumeclaims",
            ],
        ),
        group("apps", &["deployments"]),
        group("batch", &["jobs", "cronjobs"]),
        group(
            "policy.karmada.io",
            &[
                "propagationpolicies",
                "clusterpropagationpolicies",
                "overridepolicies",
                "clusteroverridepolicies",
            ],
        ),
        group(
            "work.karmada.io",
            &["resourcebindings", "clusterresourcebindings"],
        ),
        group("cluster.karmada.io", &["clusters"]),
    ]
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
