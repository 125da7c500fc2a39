//! The resource kinds the API serves inside an instance, and the Kubernetes resources behind
//! them.

use kube::core::{ApiResource, GroupVersionKind};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A kind of object inside an instance, named by its plural as in the URL
/// (`instances/{i}/namespaces/{ns}/{kind}`, `instances/{i}/{kind}`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    /// `apps/v1` Deployments.
    Deployments,
    /// `v1` Services.
    Services,
    /// `v1` ConfigMaps.
    Configmaps,
    /// `v1` Secrets.
    Secrets,
    /// `batch/v1` Jobs.
    Jobs,
    /// `batch/v1` CronJobs.
    Cronjobs,
    /// Karmada `policy.karmada.io/v1alpha1` PropagationPolicies.
    Propagationpolicies,
    /// Karmada `policy.karmada.io/v1alpha1` OverridePolicies.
    Overridepolicies,
    /// Karmada `policy.karmada.io/v1alpha1` ClusterPropagationPolicies (cluster-scoped).
    Clusterpropagationpolicies,
    /// Karmada `policy.karmada.io/v1alpha1` ClusterOverridePolicies (cluster-scoped).
    Clusteroverridepolicies,
}

impl ResourceKind {
    /// Every kind.
    pub const ALL: [ResourceKind; 10] = [
        ResourceKind::Deployments,
        ResourceKind::Services,
        ResourceKind::Configmaps,
        ResourceKind::Secrets,
        ResourceKind::Jobs,
        ResourceKind::Cronjobs,
        ResourceKind::Propagationpolicies,
        ResourceKind::Overridepolicies,
        ResourceKind::Clusterpropagationpolicies,
        ResourceKind::Clusteroverridepolicies,
    ];

    /// `(group, version, kind, plural)` of the Kubernetes resource.
    pub fn gvk_plural(self) -> (&'static str, &'static str, &'static str, &'static str) {
        match self {
            ResourceKind::Deployments => ("apps", "v1", "Deployment", "deployments"),
            ResourceKind::Services => ("", "v1", "Service", "services"),
            ResourceKind::Configmaps => ("", "v1", "ConfigMap", "configmaps"),
            ResourceKind::Secrets => ("", "v1", "Secret", "secrets"),
            ResourceKind::Jobs => ("batch", "v1", "Job", "jobs"),
            ResourceKind::Cronjobs => ("batch", "v1", "CronJob", "cronjobs"),
            ResourceKind::Propagationpolicies => (
                POLICY_GROUP,
                "v1alpha1",
                "PropagationPolicy",
                "propagationpolicies",
            ),
            ResourceKind::Overridepolicies => (
                POLICY_GROUP,
                "v1alpha1",
                "OverridePolicy",
                "overridepolicies",
            ),
            ResourceKind::Clusterpropagationpolicies => (
                POLICY_GROUP,
                "v1alpha1",
                "ClusterPropagationPolicy",
                "clusterpropagationpolicies",
            ),
            ResourceKind::Clusteroverridepolicies => (
                POLICY_GROUP,
                "v1alpha1",
                "ClusterOverridePolicy",
                "clusteroverridepolicies",
            ),
        }
    }

    /// The plural, as in URLs.
    pub fn plural(self) -> &'static str {
        self.gvk_plural().3
    }

    /// `group/version` (`apps/v1`, `v1`, ...).
    pub fn api_version(self) -> &'static str {
        match self {
            ResourceKind::Deployments => "apps/v1",
            ResourceKind::Services | ResourceKind::Configmaps | ResourceKind::Secrets => "v1",
            ResourceKind::Jobs | ResourceKind::Cronjobs => "batch/v1",
            ResourceKind::Propagationpolicies
            | ResourceKind::Overridepolicies
            | ResourceKind::Clusterpropagationpolicies
            | ResourceKind::Clusteroverridepolicies => "policy.karmada.io/v1alpha1",
        }
    }

    /// The Kubernetes kind (`Deployment`).
    pub fn kind(self) -> &'static str {
        self.gvk_plural().2
    }

    /// The kind named by `plural`, if the API serves it.
    pub fn from_plural(plural: &str) -> Option<ResourceKind> {
        ResourceKind::ALL.into_iter().find(|k| k.plural() == plural)
    }

    /// The dynamic resource description.
    pub fn api_resource(self) -> ApiResource {
        let (group, version, kind, plural) = self.gvk_plural();
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    /// Whether objects of the kind live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(
            self,
            ResourceKind::Clusterpropagationpolicies | ResourceKind::Clusteroverridepolicies
        )
    }

    /// Whether the kind is a Karmada policy (bodies may be given as `{"data": "<YAML>"}`).
    pub fn is_policy(self) -> bool {
        self.gvk_plural().0 == POLICY_GROUP
    }
}

impl std::fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.plural())
    }
}

/// API group of Karmada's policies.
pub const POLICY_GROUP: &str = "policy.karmada.io";

/// Karmada's member `Cluster` (`cluster.karmada.io/v1alpha1`, cluster-scoped).
pub fn clusters_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    )
}

/// Karmada's `ResourceBinding` (`work.karmada.io/v1alpha2`, namespaced).
pub fn resource_bindings_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
        "resourcebindings",
    )
}

/// Karmada's `ClusterResourceBinding` (`work.karmada.io/v1alpha2`, cluster-scoped).
pub fn cluster_resource_bindings_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ClusterResourceBinding"),
        "clusterresourcebindings",
    )
}

/// Karmada's `Work` (`work.karmada.io/v1alpha1`, in a member's execution space).
pub fn works_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work"),
        "works",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_know_their_scope() {
        let cases = [
            (
                ResourceKind::Deployments,
                "apps/v1",
                "Deployment",
                true,
                false,
            ),
            (ResourceKind::Services, "v1", "Service", true, false),
            (ResourceKind::Configmaps, "v1", "ConfigMap", true, false),
            (ResourceKind::Secrets, "v1", "Secret", true, false),
            (ResourceKind::Jobs, "batch/v1", "Job", true, false),
            (ResourceKind::Cronjobs, "batch/v1", "CronJob", true, false),
            (
                ResourceKind::Propagationpolicies,
                "policy.karmada.io/v1alpha1",
                "PropagationPolicy",
                true,
                true,
            ),
            (
                ResourceKind::Overridepolicies,
                "policy.karmada.io/v1alpha1",
                "OverridePolicy",
                true,
                true,
            ),
            (
                ResourceKind::Clusterpropagationpolicies,
                "policy.karmada.io/v1alpha1",
                "ClusterPropagationPolicy",
                false,
                true,
            ),
            (
                ResourceKind::Clusteroverridepolicies,
                "policy.karmada.io/v1alpha1",
                "ClusterOverridePolicy",
                false,
                true,
            ),
        ];
        assert_eq!(cases.len(), ResourceKind::ALL.len());
        for (kind, api_version, k, namespaced, policy) in cases {
            let ar = kind.api_resource();
            assert_eq!(ar.api_version, api_version, "{kind}");
            assert_eq!(kind.api_version(), api_version, "{kind}");
            assert_eq!(ar.kind, k);
            assert_eq!(ar.plural, kind.plural());
            assert_eq!(kind.namespaced(), namespaced, "{kind}");
            assert_eq!(kind.is_policy(), policy, "{kind}");
            assert_eq!(ResourceKind::from_plural(kind.plural()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.plural())
            );
        }
        assert_eq!(ResourceKind::from_plural("pods"), None);
        assert_eq!(ResourceKind::from_plural("clusters"), None);
    }
}
