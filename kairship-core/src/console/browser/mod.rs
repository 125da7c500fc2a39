//! The resource browser: any resource an instance serves, by group, version and plural, as the
//! generic REST API (`…/resources/{group}/{version}/{resource}`) names it. The index lists
//! every resource the instance's discovery serves, by group ([`index`]); a list page searches,
//! filters, sorts and pages with the REST list's semantics ([`list`]); an object's page shows
//! its YAML, events, owners and propagation ([`detail`]); it is edited with server-side apply
//! and deleted after a confirmation naming it ([`edit`]).
//!
//! Every read and write is a [`KairshipApi`](crate::api::KairshipApi) call, so the API's
//! discovery, authorization and errors apply as they do over REST. Secret values are left out
//! of every page until "reveal" is posted for one Secret.

pub mod detail;
pub mod edit;
pub mod index;
pub mod list;

use axum::Router;
use axum::routing::{get, post};
use serde::Deserialize;

use crate::console::html::url_segment;
use crate::console::request::Shared;

/// A resource of an instance, as the browser's paths name it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct ResourcePath {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
}

impl ResourcePath {
    /// The list page of the resource.
    pub fn list_url(&self) -> String {
        format!(
            "/ui/instances/{}/resources/{}/{}/{}",
            url_segment(&self.instance),
            url_segment(&self.group),
            url_segment(&self.version),
            url_segment(&self.resource)
        )
    }

    /// The page of object `name` (in `namespace` when namespaced), or one of its actions
    /// (`suffix` such as `/edit`).
    pub fn object_url(&self, namespace: Option<&str>, name: &str, suffix: &str) -> String {
        let mut url = format!("{}/{}{suffix}", self.list_url(), url_segment(name));
        if let Some(ns) = namespace.filter(|ns| !ns.is_empty()) {
            url.push_str("?ns=");
            url.push_str(&url_segment(ns));
        }
        url
    }

    /// Whether this is the core group's Secrets, whose values the browser hides.
    pub fn is_secret(&self) -> bool {
        self.group == crate::api::CORE_GROUP && self.resource == "secrets"
    }
}

/// An object of a resource, as the browser's paths name it (the namespace is the `ns` query).
#[derive(Clone, Debug, Deserialize)]
pub struct ObjectPath {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Object name.
    pub name: String,
}

impl ObjectPath {
    /// The resource the object is of.
    pub fn resource(&self) -> ResourcePath {
        ResourcePath {
            instance: self.instance.clone(),
            group: self.group.clone(),
            version: self.version.clone(),
            resource: self.resource.clone(),
        }
    }
}

/// The namespace of an object page (`?ns=`; absent for cluster-scoped objects).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct NamespaceQuery {
    /// Namespace.
    pub ns: Option<String>,
}

impl NamespaceQuery {
    /// The namespace, unless empty.
    pub fn namespace(&self) -> Option<&str> {
        self.ns.as_deref().filter(|ns| !ns.is_empty())
    }
}

/// The browser's pages and actions.
pub(super) fn routes() -> Router<Shared> {
    let index = "/ui/instances/{instance}/resources";
    let list = "/ui/instances/{instance}/resources/{group}/{version}/{resource}";
    let object = "/ui/instances/{instance}/resources/{group}/{version}/{resource}/{name}";
    Router::new()
        .route(index, get(index::index))
        .route(&format!("{index}/open"), get(list::open))
        .route(list, get(list::list))
        .route(object, get(detail::detail))
        .route(&format!("{object}/reveal"), post(detail::reveal))
        .route(&format!("{object}/edit"), get(edit::edit_form))
        .route(&format!("{object}/apply"), post(edit::apply))
        .route(
            &format!("{object}/delete"),
            get(edit::delete_form).post(edit::delete),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_encode_every_segment() {
        let r = ResourcePath {
            instance: "karmada-a".into(),
            group: "policy.karmada.io".into(),
            version: "v1alpha1".into(),
            resource: "propagationpolicies".into(),
        };
        assert_eq!(
            r.list_url(),
            "/ui/instances/karmada-a/resources/policy.karmada.io/v1alpha1/propagationpolicies"
        );
        assert_eq!(
            r.object_url(Some("demo ns"), "a/b", "/edit"),
            "/ui/instances/karmada-a/resources/policy.karmada.io/v1alpha1/propagationpolicies/a%2Fb/edit?ns=demo%20ns"
        );
        assert_eq!(
            r.object_url(None, "x", ""),
            "/ui/instances/karmada-a/resources/policy.karmada.io/v1alpha1/propagationpolicies/x"
        );
        assert!(!r.is_secret());
    }
}
