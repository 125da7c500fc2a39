//! What a routed request is about: one resource of one instance, optionally in one namespace.

use kube::core::ApiResource;

use crate::access::Caller;

/// One resource (dynamic, described by its [`ApiResource`]) of one Karmada instance, optionally
/// narrowed to a namespace. `namespace: None` means all namespaces (or a cluster-scoped resource).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceTarget {
    /// Name of the Kairship instance.
    pub instance: String,
    /// The resource.
    pub resource: ApiResource,
    /// The namespace, if the request is namespaced.
    pub namespace: Option<String>,
    /// Who the request is made for: a writer that impersonates (see
    /// [`WriteIdentity`](crate::access::WriteIdentity)) acts as this caller.
    pub acting_as: Option<Caller>,
}

impl ResourceTarget {
    /// A target over all namespaces (or a cluster-scoped resource).
    pub fn all(instance: impl Into<String>, resource: ApiResource) -> Self {
        ResourceTarget {
            instance: instance.into(),
            resource,
            namespace: None,
            acting_as: None,
        }
    }

    /// A target in one namespace.
    pub fn namespaced(
        instance: impl Into<String>,
        resource: ApiResource,
        namespace: impl Into<String>,
    ) -> Self {
        ResourceTarget {
            instance: instance.into(),
            resource,
            namespace: Some(namespace.into()),
            acting_as: None,
        }
    }

    /// The same target, made for `caller`.
    pub fn acting_as(mut self, caller: Caller) -> Self {
        self.acting_as = Some(caller);
        self
    }

    /// The key that identifies the resource of the instance regardless of namespace: caches and
    /// read-your-writes marks are kept per key.
    pub fn key(&self) -> ResourceKey {
        ResourceKey::new(&self.instance, &self.resource)
    }

    /// The collection URL path on the instance apiserver, e.g.
    /// `/apis/apps/v1/namespaces/default/deployments` or `/api/v1/configmaps`.
    pub fn collection_path(&self) -> String {
        collection_path(&self.resource, self.namespace.as_deref())
    }

    /// A short human-readable description (`instance/group/version/plural[@namespace]`), for
    /// errors and logs.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} in namespace {ns}", self.key()),
            None => self.key().to_string(),
        }
    }
}

/// A resource of an instance, independent of namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceKey {
    /// Name of the instance.
    pub instance: String,
    /// API group (empty for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name.
    pub plural: String,
}

impl ResourceKey {
    /// The key of `resource` in `instance`.
    pub fn new(instance: &str, resource: &ApiResource) -> Self {
        ResourceKey {
            instance: instance.to_owned(),
            group: resource.group.clone(),
            version: resource.version.clone(),
            plural: resource.plural.clone(),
        }
    }
}

impl std::fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}/{}", self.instance, self.version, self.plural)
        } else {
            write!(
                f,
                "{}/{}/{}/{}",
                self.instance, self.group, self.version, self.plural
            )
        }
    }
}

/// The collection URL path of `resource`, in `namespace` when given.
pub fn collection_path(resource: &ApiResource, namespace: Option<&str>) -> String {
    let prefix = if resource.group.is_empty() {
        format!("/api/{}", resource.version)
    } else {
        format!("/apis/{}/{}", resource.group, resource.version)
    };
    match namespace {
        Some(ns) => format!("{prefix}/namespaces/{ns}/{}", resource.plural),
        None => format!("{prefix}/{}", resource.plural),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    #[test]
    fn collection_paths() {
        let deploy = ar("apps", "v1", "Deployment", "deployments");
        let cm = ar("", "v1", "ConfigMap", "configmaps");
        for (resource, ns, want) in [
            (
                &deploy,
                Some("default"),
                "/apis/apps/v1/namespaces/default/deployments",
            ),
            (&deploy, None, "/apis/apps/v1/deployments"),
            (
                &cm,
                Some("kube-system"),
                "/api/v1/namespaces/kube-system/configmaps",
            ),
            (&cm, None, "/api/v1/configmaps"),
        ] {
            assert_eq!(collection_path(resource, ns), want);
        }
    }

    #[test]
    fn key_ignores_namespace_and_displays_group() {
        let deploy = ar("apps", "v1", "Deployment", "deployments");
        let a = ResourceTarget::namespaced("i1", deploy.clone(), "a");
        let b = ResourceTarget::all("i1", deploy);
        assert_eq!(a.key(), b.key());
        assert_eq!(a.key().to_string(), "i1/apps/v1/deployments");
        let cm = ResourceTarget::all("i1", ar("", "v1", "ConfigMap", "configmaps"));
        assert_eq!(cm.key().to_string(), "i1/v1/configmaps");
    }
}
