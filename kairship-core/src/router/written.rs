//! Read-your-writes across API server replicas: each replica remembers the writes it carried,
//! but a caller's next read may reach another replica. So a write's answer sets a cookie
//! naming the resource and the resourceVersion the instance gave it, scoped to the instance's
//! paths; a client that returns it (browsers, HTTP clients with a cookie jar) makes any
//! replica wait, bounded, until its read backend has seen that version, as for its own writes
//! ([`ReadWriteRouter::await_version`](super::ReadWriteRouter::await_version)).

use kube::core::ApiResource;

use super::target::ResourceTarget;

/// Prefix of the cookie names: `kairship-written.<version>.<plural>[.<group>]`.
pub const WRITTEN_COOKIE_PREFIX: &str = "kairship-written.";

/// How long a written version is carried: past it every backend has long caught up.
pub const WRITTEN_COOKIE_MAX_AGE_SECONDS: u64 = 60;

/// The cookie name of `target`'s resource.
pub fn written_cookie_name(target: &ResourceTarget) -> String {
    let r = &target.resource;
    if r.group.is_empty() {
        format!("{WRITTEN_COOKIE_PREFIX}{}.{}", r.version, r.plural)
    } else {
        format!(
            "{WRITTEN_COOKIE_PREFIX}{}.{}.{}",
            r.version, r.plural, r.group
        )
    }
}

/// The target whose cookie a call naming `group` (empty for the core group), `version` and
/// `plural` of `instance` reads and sets: the cookie names only these, so a caller that knows
/// no more (a REST or gRPC path) needs no discovery to find it.
pub fn written_target(instance: &str, group: &str, version: &str, plural: &str) -> ResourceTarget {
    let api_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    ResourceTarget::all(
        instance,
        ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version,
            kind: String::new(),
            plural: plural.to_owned(),
        },
    )
}

/// Whether `version` may be carried in a cookie: a resourceVersion is opaque, but a cookie
/// value must not hold separators; anything else is not carried.
fn cookie_safe(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 64
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The `Set-Cookie` value after a write of `target` answered with resourceVersion `version`,
/// valid under `scope` (the instance's URL path prefix); `None` for a version a cookie
/// cannot carry.
pub fn written_cookie(target: &ResourceTarget, version: &str, scope: &str) -> Option<String> {
    cookie_safe(version).then(|| {
        format!(
            "{}={version}; Path={scope}; Max-Age={WRITTEN_COOKIE_MAX_AGE_SECONDS}; HttpOnly; SameSite=Lax",
            written_cookie_name(target)
        )
    })
}

/// `value` when it may be carried as a written version (in gRPC metadata: no cookie names
/// the resource there, the call does).
pub fn carried_version(value: &str) -> Option<&str> {
    cookie_safe(value).then_some(value)
}

/// The written version a `Cookie` header carries for `target`'s resource, if any.
pub fn written_version<'a>(cookies: &'a str, target: &ResourceTarget) -> Option<&'a str> {
    let name = written_cookie_name(target);
    cookies
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, value)| *key == name && cookie_safe(value))
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::{ApiResource, GroupVersionKind};

    fn target(group: &str, kind: &str, plural: &str) -> ResourceTarget {
        ResourceTarget::all(
            "i1",
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural),
        )
    }

    #[test]
    fn cookies_name_the_resource_and_carry_the_version() {
        let deploy = target("apps", "Deployment", "deployments");
        let cm = target("", "ConfigMap", "configmaps");
        assert_eq!(
            written_cookie(&deploy, "42", "/apis/kairship.io/v1alpha1/instances/i1").as_deref(),
            Some(
                "kairship-written.v1.deployments.apps=42; Path=/apis/kairship.io/v1alpha1/instances/i1; Max-Age=60; HttpOnly; SameSite=Lax"
            )
        );
        assert_eq!(written_cookie_name(&cm), "kairship-written.v1.configmaps");
        assert_eq!(
            written_cookie_name(&written_target("i1", "apps", "v1", "deployments")),
            written_cookie_name(&deploy)
        );
        assert_eq!(written_target("i1", "", "v1", "configmaps").key(), cm.key());
        assert_eq!(written_cookie(&cm, "a;b", "/"), None);
        assert_eq!(written_cookie(&cm, "", "/"), None);
        assert_eq!(carried_version("42"), Some("42"));
        assert_eq!(carried_version("4 2"), None);
        // (Cookie header, target, carried version)
        for (header, t, want) in [
            (
                "kairship-written.v1.deployments.apps=42",
                &deploy,
                Some("42"),
            ),
            (
                "a=b; kairship-written.v1.configmaps=7; kairship-written.v1.deployments.apps=9",
                &cm,
                Some("7"),
            ),
            ("kairship-written.v1.configmaps=7", &deploy, None),
            ("kairship-written.v1.deployments.apps=4 2", &deploy, None),
            ("", &deploy, None),
        ] {
            assert_eq!(written_version(header, t), want, "{header}");
        }
    }
}
