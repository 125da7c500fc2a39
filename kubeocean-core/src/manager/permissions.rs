//! Whether the worker kubeconfig grants what the syncer needs, asked of the worker with
//! SelfSubjectAccessReviews (the answer the worker's own authorizer gives, whatever its RBAC
//! looks like). A binding that lacks any is marked Failed with reason `PermissionDenied`
//! and a message listing what is missing.

use std::fmt;

use futures::future::join_all;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::PostParams;
use kube::{Api, Client};

/// One thing the syncer does in the worker cluster.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Permission {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// Resource, optionally with its subresource (`resourceleasingpolicies/status`).
    pub resource: &'static str,
    /// Namespace for namespaced grants; `None` means cluster-wide.
    pub namespace: Option<String>,
    /// Verb.
    pub verb: &'static str,
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.verb, self.qualified_resource())?;
        if let Some(ns) = &self.namespace {
            write!(f, " in namespace {ns}")?;
        }
        Ok(())
    }
}

impl Permission {
    fn new(group: &'static str, resource: &'static str, verb: &'static str) -> Permission {
        Permission {
            group,
            resource,
            namespace: None,
            verb,
        }
    }

    fn in_namespace(mut self, namespace: &str) -> Permission {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// `resource` or `resource.group`, as kubectl names resources.
    fn qualified_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_owned()
        } else {
            let (resource, sub) = match self.resource.split_once('/') {
                Some((r, s)) => (r, Some(s)),
                None => (self.resource, None),
            };
            match sub {
                Some(sub) => format!("{resource}.{}/{sub}", self.group),
                None => format!("{resource}.{}", self.group),
            }
        }
    }

    fn review(&self) -> SelfSubjectAccessReview {
        let (resource, subresource) = match self.resource.split_once('/') {
            Some((r, s)) => (r, Some(s.to_owned())),
            None => (self.resource, None),
        };
        SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(self.group.to_owned()),
                    resource: Some(resource.to_owned()),
                    subresource,
                    namespace: self.namespace.clone(),
                    verb: Some(self.verb.to_owned()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        }
    }
}

/// Where a [`Grant`] applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everywhere (a ClusterRole).
    Cluster,
    /// In the binding's mount namespace only (a Role there).
    MountNamespace,
}

/// Verbs on resources of one API group the syncer uses, in one scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Cluster-wide or in the mount namespace.
    pub scope: Scope,
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// Resources (optionally with a subresource).
    pub resources: &'static [&'static str],
    /// Verbs.
    pub verbs: &'static [&'static str],
}

/// The objects the syncer writes in the mount namespace (and removes when the binding goes).
pub const MOUNT_NAMESPACE_RESOURCES: [&str; 4] =
    ["pods", "configmaps", "secrets", "persistentvolumeclaims"];

/// Everything the syncer does in the worker cluster: the one list the manager's permission
/// check is made from (and that the worker chart is tested against).
///
/// - nodes, pods, leasing policies and CSINodes are watched everywhere; nodes are labelled
///   with the applied policy and the policies' status is written;
/// - Pods, ConfigMaps, Secrets and PVCs are written in the mount namespace, and removed with
///   `deletecollection` when the binding is deleted (`topdown::cleanup`);
/// - PersistentVolumes (cluster-scoped) are copied, and removed the same way;
/// - the binding's PriorityClass (`kubeocean-default` unless set) is read: physical pods
///   cannot be created without it;
/// - Services and EndpointSlices are written in the mount namespace (`serviceNamespaces`);
///   the slices are removed with `deletecollection` too;
/// - Events of the mount namespace are watched (reflected onto virtual pods and claims).
pub const SYNCER_GRANTS: &[Grant] = &[
    Grant {
        scope: Scope::Cluster,
        group: "",
        resources: &["nodes", "pods"],
        verbs: &["list", "watch"],
    },
    Grant {
        scope: Scope::Cluster,
        group: crate::crd::GROUP,
        resources: &["resourceleasingpolicies"],
        verbs: &["list", "watch"],
    },
    Grant {
        scope: Scope::Cluster,
        group: "storage.k8s.io",
        resources: &["csinodes"],
        verbs: &["list", "watch"],
    },
    Grant {
        scope: Scope::Cluster,
        group: "",
        resources: &["nodes"],
        verbs: &["patch"],
    },
    Grant {
        scope: Scope::Cluster,
        group: crate::crd::GROUP,
        resources: &["resourceleasingpolicies/status"],
        verbs: &["update"],
    },
    Grant {
        scope: Scope::MountNamespace,
        group: "",
        resources: &MOUNT_NAMESPACE_RESOURCES,
        verbs: &[
            "get",
            "list",
            "watch",
            "create",
            "update",
            "delete",
            "deletecollection",
        ],
    },
    Grant {
        scope: Scope::Cluster,
        group: "",
        resources: &["persistentvolumes"],
        verbs: &[
            "get",
            "list",
            "watch",
            "create",
            "delete",
            "deletecollection",
        ],
    },
    Grant {
        scope: Scope::Cluster,
        group: "scheduling.k8s.io",
        resources: &["priorityclasses"],
        verbs: &["get"],
    },
    // Services of serviceNamespaces and their EndpointSlices, reflected into the mount
    // namespace. The cleanup removes the slices with deletecollection; Services have no
    // deletecollection, so they are removed one by one.
    Grant {
        scope: Scope::MountNamespace,
        group: "",
        resources: &["services"],
        verbs: &["get", "list", "watch", "create", "update", "delete"],
    },
    Grant {
        scope: Scope::MountNamespace,
        group: "discovery.k8s.io",
        resources: &["endpointslices"],
        verbs: &[
            "get",
            "list",
            "watch",
            "create",
            "update",
            "delete",
            "deletecollection",
        ],
    },
    // Releasing upstream Kubeocean's finalizer of policies being deleted.
    Grant {
        scope: Scope::Cluster,
        group: crate::crd::GROUP,
        resources: &["resourceleasingpolicies"],
        verbs: &["patch"],
    },
    // `kubectl debug` on a virtual pod: its ephemeral containers go to the physical pod.
    Grant {
        scope: Scope::MountNamespace,
        group: "",
        resources: &["pods/ephemeralcontainers"],
        verbs: &["patch"],
    },
    // The worker's Events about physical pods and claims, reflected onto the virtual ones.
    Grant {
        scope: Scope::MountNamespace,
        group: "",
        resources: &["events"],
        verbs: &["list", "watch"],
    },
];

/// What the syncer needs in the worker cluster for a binding whose mount namespace is
/// `mount_namespace`: [`SYNCER_GRANTS`], one [`Permission`] per verb and resource.
pub fn required_permissions(mount_namespace: &str) -> Vec<Permission> {
    let mut all = Vec::new();
    for grant in SYNCER_GRANTS {
        for resource in grant.resources {
            for verb in grant.verbs {
                let permission = Permission::new(grant.group, resource, verb);
                all.push(match grant.scope {
                    Scope::Cluster => permission,
                    Scope::MountNamespace => permission.in_namespace(mount_namespace),
                });
            }
        }
    }
    all
}

/// `missing` as one line, grouped by resource: `nodes: patch; pods in namespace m: create,
/// delete`.
pub fn describe_missing(missing: &[Permission]) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for p in missing {
        let key = match &p.namespace {
            Some(ns) => format!("{} in namespace {ns}", p.qualified_resource()),
            None => p.qualified_resource(),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, verbs)) => verbs.push(p.verb),
            None => groups.push((key, vec![p.verb])),
        }
    }
    groups
        .iter()
        .map(|(key, verbs)| format!("{key}: {}", verbs.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The permissions of `required` the worker does not grant to the kubeconfig's user, in
/// order. Fails when a review cannot be made at all.
pub async fn missing_permissions(
    worker: &Client,
    required: &[Permission],
) -> Result<Vec<Permission>, kube::Error> {
    let api: Api<SelfSubjectAccessReview> = Api::all(worker.clone());
    let reviews = required.iter().map(|p| {
        let api = api.clone();
        async move {
            let answer = api.create(&PostParams::default(), &p.review()).await?;
            Ok::<bool, kube::Error>(answer.status.is_some_and(|s| s.allowed))
        }
    });
    let answers = join_all(reviews).await;
    let mut missing = Vec::new();
    for (permission, answer) in required.iter().zip(answers) {
        if !answer? {
            missing.push(permission.clone());
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_covers_what_the_syncer_does() {
        let required = required_permissions("mnt");
        let has = |verb: &str, resource: &str, ns: Option<&str>| {
            required
                .iter()
                .any(|p| p.verb == verb && p.resource == resource && p.namespace.as_deref() == ns)
        };
        for (verb, resource, ns, want) in [
            ("list", "nodes", None, true),
            ("watch", "pods", None, true),
            ("watch", "resourceleasingpolicies", None, true),
            ("list", "csinodes", None, true),
            ("create", "pods", Some("mnt"), true),
            ("delete", "persistentvolumeclaims", Some("mnt"), true),
            ("update", "secrets", Some("mnt"), true),
            ("create", "pods", None, false),
            ("create", "persistentvolumes", None, true),
            ("update", "resourceleasingpolicies/status", None, true),
            // The cleanup of a deleted binding.
            ("deletecollection", "pods", Some("mnt"), true),
            ("deletecollection", "configmaps", Some("mnt"), true),
            ("deletecollection", "secrets", Some("mnt"), true),
            (
                "deletecollection",
                "persistentvolumeclaims",
                Some("mnt"),
                true,
            ),
            ("deletecollection", "persistentvolumes", None, true),
            ("deletecollection", "endpointslices", Some("mnt"), true),
            ("deletecollection", "services", Some("mnt"), false),
            ("list", "configmaps", Some("mnt"), true),
            ("get", "priorityclasses", None, true),
            ("deletecollection", "pods", None, false),
        ] {
            assert_eq!(has(verb, resource, ns), want, "{verb} {resource} {ns:?}");
        }
        let mut sorted = required.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), required.len(), "no duplicates");
    }

    #[test]
    fn describe_table() {
        let p = |group, resource, verb, ns: Option<&str>| Permission {
            group,
            resource,
            verb,
            namespace: ns.map(str::to_owned),
        };
        for (missing, want) in [
            (vec![], ""),
            (vec![p("", "nodes", "list", None)], "nodes: list"),
            (
                vec![
                    p("", "nodes", "list", None),
                    p("", "pods", "create", Some("m")),
                    p("", "nodes", "watch", None),
                    p("", "pods", "delete", Some("m")),
                ],
                "nodes: list, watch; pods in namespace m: create, delete",
            ),
            (
                vec![p(
                    "cloud.tencent.com",
                    "resourceleasingpolicies/status",
                    "update",
                    None,
                )],
                "resourceleasingpolicies.cloud.tencent.com/status: update",
            ),
        ] {
            assert_eq!(describe_missing(&missing), want);
        }
        assert_eq!(
            p("storage.k8s.io", "csinodes", "watch", None).to_string(),
            "watch csinodes.storage.k8s.io"
        );
    }

    #[test]
    fn reviews_split_subresources() {
        let review = Permission::new(
            crate::crd::GROUP,
            "resourceleasingpolicies/status",
            "update",
        )
        .review();
        let attrs = review.spec.resource_attributes.unwrap();
        assert_eq!(attrs.resource.as_deref(), Some("resourceleasingpolicies"));
        assert_eq!(attrs.subresource.as_deref(), Some("status"));
        assert_eq!(attrs.namespace, None);
    }
}
