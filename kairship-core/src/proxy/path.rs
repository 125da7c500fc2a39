//! What a Kubernetes API path addresses, parsed the way kube-apiserver's request-info
//! resolver does.

/// A path of the Kubernetes API.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubePath {
    /// Discovery and other non-resource paths that are passed through unchanged: `/api`,
    /// `/apis`, `/apis/{group}`, `/api/{version}`, `/apis/{group}/{version}`, `/version`,
    /// `/openapi/...`, `/healthz`, `/readyz`, `/livez`.
    Discovery,
    /// A resource collection, object or subresource.
    Resource(ResourcePath),
    /// Anything else (forwarded as is; the instance answers).
    Other,
}

/// A resource path: `/api/{v}/...` or `/apis/{g}/{v}/...`, namespaced or not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group, empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace named in the path (never set for the `namespaces` resource itself).
    pub namespace: Option<String>,
    /// Plural resource name.
    pub resource: String,
    /// Object name; `None` for a collection.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`, `log`, `exec`, `proxy`, ...).
    pub subresource: Option<String>,
    /// The legacy `/watch/` prefix was used (a watch, whatever the query says).
    pub watch_prefix: bool,
}

impl ResourcePath {
    /// Whether the path addresses a whole collection.
    pub fn is_collection(&self) -> bool {
        self.name.is_none()
    }

    /// The `apiVersion` of the resource (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Subresources of a namespace object: `/api/v1/namespaces/{ns}/status|finalize` address the
/// namespace, not a resource called `status` inside it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Parses the Kubernetes part of a proxied path (everything after `/proxy`).
pub fn parse_kube_path(path: &str) -> KubePath {
    let trimmed = path.trim_start_matches('/');
    let segs: Vec<&str> = if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    };
    match segs.as_slice() {
        ["api" | "apis"]
        | ["version" | "openapi" | "healthz" | "readyz" | "livez", ..]
        | ["api", _]
        | ["apis", _]
        | ["apis", _, _] => return KubePath::Discovery,
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return KubePath::Other,
    };
    // A trailing slash (kubectl never sends one) yields an empty segment: not a resource.
    if (group.is_empty() && segs.first() == Some(&"apis")) || version.is_empty() {
        return KubePath::Other;
    }
    let (watch_prefix, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    if rest.is_empty() || rest.iter().any(|s| s.is_empty()) {
        return KubePath::Other;
    }
    let (namespace, parts): (Option<&str>, &[&str]) = match rest {
        ["namespaces", ns, resource, ..] if !NAMESPACE_SUBRESOURCES.contains(resource) => {
            (Some(*ns), &rest[2..])
        }
        other => (None, other),
    };
    let (resource, name, subresource) = match parts {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        // `proxy` (pods/services/nodes) carries a path of its own after the subresource.
        [r, n, "proxy", ..] => (*r, Some(*n), Some("proxy")),
        _ => return KubePath::Other,
    };
    KubePath::Resource(ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        namespace: namespace.map(str::to_owned),
        resource: resource.to_owned(),
        name: name.map(str::to_owned),
        subresource: subresource.map(str::to_owned),
        watch_prefix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(
        group: &str,
        version: &str,
        namespace: Option<&str>,
        resource: &str,
        name: Option<&str>,
        subresource: Option<&str>,
    ) -> KubePath {
        KubePath::Resource(ResourcePath {
            group: group.into(),
            version: version.into(),
            namespace: namespace.map(Into::into),
            resource: resource.into(),
            name: name.map(Into::into),
            subresource: subresource.map(Into::into),
            watch_prefix: false,
        })
    }

    #[test]
    fn parses_kubernetes_paths() {
        let cases = [
            ("/api", KubePath::Discovery),
            ("/apis", KubePath::Discovery),
            ("/api/v1", KubePath::Discovery),
            ("/apis/apps", KubePath::Discovery),
            ("/apis/apps/v1", KubePath::Discovery),
            ("/version", KubePath::Discovery),
            ("/openapi/v2", KubePath::Discovery),
            ("/openapi/v3/apis/apps/v1", KubePath::Discovery),
            ("/readyz", KubePath::Discovery),
            ("/", KubePath::Other),
            ("", KubePath::Other),
            ("/metrics", KubePath::Other),
            ("/logs/x", KubePath::Other),
            ("/api/v1/pods", res("", "v1", None, "pods", None, None)),
            (
                "/api/v1/namespaces/default/pods",
                res("", "v1", Some("default"), "pods", None, None),
            ),
            (
                "/api/v1/namespaces/default/pods/web",
                res("", "v1", Some("default"), "pods", Some("web"), None),
            ),
            (
                "/api/v1/namespaces/default/pods/web/log",
                res("", "v1", Some("default"), "pods", Some("web"), Some("log")),
            ),
            (
                "/api/v1/namespaces/default/pods/web/proxy/metrics/x",
                res(
                    "",
                    "v1",
                    Some("default"),
                    "pods",
                    Some("web"),
                    Some("proxy"),
                ),
            ),
            (
                "/api/v1/namespaces/default/pods/web/log/extra",
                KubePath::Other,
            ),
            (
                "/api/v1/namespaces",
                res("", "v1", None, "namespaces", None, None),
            ),
            (
                "/api/v1/namespaces/default",
                res("", "v1", None, "namespaces", Some("default"), None),
            ),
            (
                "/api/v1/namespaces/default/status",
                res(
                    "",
                    "v1",
                    None,
                    "namespaces",
                    Some("default"),
                    Some("status"),
                ),
            ),
            (
                "/api/v1/namespaces/default/finalize",
                res(
                    "",
                    "v1",
                    None,
                    "namespaces",
                    Some("default"),
                    Some("finalize"),
                ),
            ),
            (
                "/api/v1/nodes/n1",
                res("", "v1", None, "nodes", Some("n1"), None),
            ),
            (
                "/apis/apps/v1/deployments",
                res("apps", "v1", None, "deployments", None, None),
            ),
            (
                "/apis/apps/v1/namespaces/team-a/deployments/web/scale",
                res(
                    "apps",
                    "v1",
                    Some("team-a"),
                    "deployments",
                    Some("web"),
                    Some("scale"),
                ),
            ),
            (
                "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies/p",
                res(
                    "policy.karmada.io",
                    "v1alpha1",
                    None,
                    "clusterpropagationpolicies",
                    Some("p"),
                    None,
                ),
            ),
            ("/apis/apps/v1/deployments/", KubePath::Other),
            ("/apis//v1/deployments", KubePath::Other),
            ("/api/v1/namespaces//pods", KubePath::Other),
        ];
        for (path, want) in cases {
            assert_eq!(parse_kube_path(path), want, "{path}");
        }
    }

    #[test]
    fn legacy_watch_prefix_is_recognised() {
        let KubePath::Resource(path) = parse_kube_path("/api/v1/watch/namespaces/a/pods") else {
            panic!("not a resource path");
        };
        assert!(path.watch_prefix);
        assert_eq!(path.namespace.as_deref(), Some("a"));
        assert_eq!(path.resource, "pods");
        assert!(path.is_collection());
        assert_eq!(path.api_version(), "v1");
        let KubePath::Resource(path) = parse_kube_path("/apis/apps/v1/watch/deployments/web")
        else {
            panic!("not a resource path");
        };
        assert!(path.watch_prefix);
        assert_eq!(path.name.as_deref(), Some("web"));
        assert_eq!(path.api_version(), "apps/v1");
    }
}
