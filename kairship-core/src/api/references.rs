//! Whether a propagation policy is still in use: Karmada's (Cluster)ResourceBindings name the
//! policy that placed them by a permanent-id label (current Karmada) or by name/namespace
//! annotations (older releases: labels). A policy in use must not be deleted.

use kube::core::DynamicObject;

use crate::models::work::{ClusterResourceBinding, ResourceBinding};

/// Label carrying a PropagationPolicy's permanent id, on the policy and on its bindings.
pub const PROPAGATION_POLICY_PERMANENT_ID: &str = "propagationpolicy.karmada.io/permanent-id";
/// Label carrying a ClusterPropagationPolicy's permanent id, on the policy and its bindings.
pub const CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: &str =
    "clusterpropagationpolicy.karmada.io/permanent-id";

/// The policy about to be deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyRef<'a> {
    /// A PropagationPolicy.
    Namespaced {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
        /// Its `propagationpolicy.karmada.io/permanent-id` label, if set.
        permanent_id: Option<&'a str>,
    },
    /// A ClusterPropagationPolicy.
    Cluster {
        /// Its name.
        name: &'a str,
        /// Its `clusterpropagationpolicy.karmada.io/permanent-id` label, if set.
        permanent_id: Option<&'a str>,
    },
}

impl<'a> PolicyRef<'a> {
    /// The reference of a policy object (`namespace` set for PropagationPolicies).
    pub fn of(policy: &'a DynamicObject, namespace: Option<&'a str>) -> PolicyRef<'a> {
        let name = policy.metadata.name.as_deref().unwrap_or_default();
        let label = |key: &str| {
            policy
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(key))
                .map(String::as_str)
        };
        match namespace {
            Some(namespace) => PolicyRef::Namespaced {
                namespace,
                name,
                permanent_id: label(PROPAGATION_POLICY_PERMANENT_ID),
            },
            None => PolicyRef::Cluster {
                name,
                permanent_id: label(CLUSTER_PROPAGATION_POLICY_PERMANENT_ID),
            },
        }
    }
}

fn label<'o>(binding: &'o DynamicObject, key: &str) -> Option<&'o str> {
    binding
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// Whether `binding` (a ResourceBinding, or a ClusterResourceBinding when `cluster_scoped`)
/// was produced by `policy`.
pub fn binding_uses(policy: &PolicyRef<'_>, binding: &DynamicObject, cluster_scoped: bool) -> bool {
    match *policy {
        PolicyRef::Namespaced {
            namespace,
            name,
            permanent_id,
        } => {
            if cluster_scoped || binding.metadata.namespace.as_deref() != Some(namespace) {
                return false;
            }
            if permanent_id.is_some()
                && label(binding, PROPAGATION_POLICY_PERMANENT_ID) == permanent_id
            {
                return true;
            }
            ResourceBinding {
                metadata: binding.metadata.clone(),
                ..ResourceBinding::default()
            }
            .uses_propagation_policy(namespace, name)
        }
        PolicyRef::Cluster { name, permanent_id } => {
            if permanent_id.is_some()
                && label(binding, CLUSTER_PROPAGATION_POLICY_PERMANENT_ID) == permanent_id
            {
                return true;
            }
            if cluster_scoped {
                ClusterResourceBinding {
                    metadata: binding.metadata.clone(),
                    ..ClusterResourceBinding::default()
                }
                .uses_cluster_propagation_policy(name)
            } else {
                ResourceBinding {
                    metadata: binding.metadata.clone(),
                    ..ResourceBinding::default()
                }
                .uses_cluster_propagation_policy(name)
            }
        }
    }
}

/// `namespace/name` (or `name`) of a binding, for messages.
pub fn binding_label(binding: &DynamicObject) -> String {
    let name = binding.metadata.name.as_deref().unwrap_or_default();
    match binding.metadata.namespace.as_deref() {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(
        ns: Option<&str>,
        labels: serde_json::Value,
        annotations: serde_json::Value,
    ) -> DynamicObject {
        let mut meta =
            json!({"name": "web-deployment", "labels": labels, "annotations": annotations});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        serde_json::from_value(json!({"apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding", "metadata": meta}))
        .unwrap()
    }

    #[test]
    fn binding_uses_table() {
        let pp = PolicyRef::Namespaced {
            namespace: "team-a",
            name: "spread",
            permanent_id: Some("id-1"),
        };
        let pp_no_id = PolicyRef::Namespaced {
            namespace: "team-a",
            name: "spread",
            permanent_id: None,
        };
        let cpp = PolicyRef::Cluster {
            name: "global",
            permanent_id: Some("cid-9"),
        };
        let by_id = binding(
            Some("team-a"),
            json!({PROPAGATION_POLICY_PERMANENT_ID: "id-1"}),
            json!({}),
        );
        let by_names = binding(
            Some("team-a"),
            json!({}),
            json!({"propagationpolicy.karmada.io/name": "spread",
                   "propagationpolicy.karmada.io/namespace": "team-a"}),
        );
        let by_old_labels = binding(
            Some("team-a"),
            json!({"propagationpolicy.karmada.io/name": "spread",
                   "propagationpolicy.karmada.io/namespace": "team-a"}),
            json!({}),
        );
        let other_ns = binding(
            Some("team-b"),
            json!({PROPAGATION_POLICY_PERMANENT_ID: "id-1"}),
            json!({}),
        );
        let other_id = binding(
            Some("team-a"),
            json!({PROPAGATION_POLICY_PERMANENT_ID: "id-2"}),
            json!({}),
        );
        let by_cpp_id = binding(
            Some("team-b"),
            json!({CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: "cid-9"}),
            json!({}),
        );
        let by_cpp_name = binding(
            None,
            json!({}),
            json!({"clusterpropagationpolicy.karmada.io/name": "global"}),
        );
        let unrelated = binding(Some("team-a"), json!({}), json!({}));
        let cases = [
            (&pp, &by_id, false, true),
            (&pp, &by_names, false, true),
            (&pp, &by_old_labels, false, true),
            (&pp_no_id, &by_names, false, true),
            (&pp_no_id, &by_id, false, false),
            (&pp, &other_ns, false, false),
            (&pp, &other_id, false, false),
            (&pp, &unrelated, false, false),
            (&pp, &by_names, true, false),
            (&cpp, &by_cpp_id, false, true),
            (&cpp, &by_cpp_name, true, true),
            (&cpp, &by_id, false, false),
            (&cpp, &unrelated, false, false),
        ];
        for (i, (policy, binding, cluster_scoped, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                binding_uses(policy, binding, cluster_scoped),
                want,
                "case {i}"
            );
        }
        assert_eq!(binding_label(&by_id), "team-a/web-deployment");
        assert_eq!(binding_label(&by_cpp_name), "web-deployment");
    }

    #[test]
    fn policy_ref_reads_the_permanent_id_label() {
        let policy: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "n",
                         "labels": {PROPAGATION_POLICY_PERMANENT_ID: "x"}}
        }))
        .unwrap();
        assert_eq!(
            PolicyRef::of(&policy, Some("n")),
            PolicyRef::Namespaced {
                namespace: "n",
                name: "p",
                permanent_id: Some("x")
            }
        );
        assert_eq!(
            PolicyRef::of(&policy, None),
            PolicyRef::Cluster {
                name: "p",
                permanent_id: None
            }
        );
    }
}
