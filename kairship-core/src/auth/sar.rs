//! Authorization with SubjectAccessReview on the host cluster.

use std::time::Instant;

use async_trait::async_trait;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Api;
use kube::api::PostParams;

use super::cache::{ReviewCacheConfig, TtlCache};
use crate::access::{AccessError, Authorizer, Caller, InstanceResource, Verb};

/// The API group of Kairship's instances, as RBAC rules name it.
pub const INSTANCES_GROUP: &str = "kairship.io";
/// The resource reviewed, as RBAC rules name it (with the subresource `proxy` for objects
/// inside an instance).
pub const INSTANCES_RESOURCE: &str = "instances";

/// What a review answer is cached under: the caller's identity (groups in a canonical
/// order), the verb, the resource (instance or inside it) and the instance.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReviewKey {
    /// User name.
    pub user: String,
    /// Groups, sorted and without duplicates.
    pub groups: Vec<String>,
    /// The verb.
    pub verb: Verb,
    /// The Instance itself or the objects inside it.
    pub resource: InstanceResource,
    /// The instance, `None` for all instances.
    pub instance: Option<String>,
}

impl ReviewKey {
    /// The key of `caller` applying `verb` to `resource` of `instance`.
    pub fn new(
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> Self {
        let mut groups = caller.groups.clone();
        groups.sort();
        groups.dedup();
        ReviewKey {
            user: caller.user.clone(),
            groups,
            verb,
            resource,
            instance: instance.map(str::to_owned),
        }
    }
}

/// The SubjectAccessReview asking whether `caller` may apply `verb` to `kairship.io/instances`
/// (subresource `proxy` for objects inside the instance) named `instance` (any instance when
/// `None`).
pub fn instance_access_review(
    caller: &Caller,
    verb: Verb,
    resource: InstanceResource,
    instance: Option<&str>,
) -> SubjectAccessReview {
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(caller.user.clone()),
            groups: Some(caller.groups.clone()),
            uid: caller.uid.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some(INSTANCES_GROUP.to_owned()),
                resource: Some(resource.resource().to_owned()),
                subresource: resource.subresource().map(str::to_owned),
                name: instance.map(str::to_owned),
                verb: Some(verb.as_str().to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    }
}

/// Decides with a `SubjectAccessReview` on the host cluster for `kairship.io/instances` (or
/// its `proxy` subresource), the instance's name and the verb, so that RBAC on the host (the per-instance ClusterRoles and
/// their bindings) governs access. Answers are reused for a short while (10 s by default),
/// keyed by [`ReviewKey`]; failing to reach the host is [`AccessError::Unavailable`].
pub struct SubjectAccessReviewAuthorizer {
    reviews: Api<SubjectAccessReview>,
    config: ReviewCacheConfig,
    cache: TtlCache<ReviewKey, bool>,
}

impl std::fmt::Debug for SubjectAccessReviewAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubjectAccessReviewAuthorizer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SubjectAccessReviewAuthorizer {
    /// Reviews through `host` (a client of the host cluster allowed to create
    /// `authorization.k8s.io/subjectaccessreviews`) with the default cache.
    pub fn new(host: kube::Client) -> Self {
        Self::with_config(host, ReviewCacheConfig::default())
    }

    /// Reviews with the given cache configuration.
    pub fn with_config(host: kube::Client, config: ReviewCacheConfig) -> Self {
        SubjectAccessReviewAuthorizer {
            reviews: Api::all(host),
            config,
            cache: TtlCache::new(config.capacity),
        }
    }
}

#[async_trait]
impl Authorizer for SubjectAccessReviewAuthorizer {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        let key = ReviewKey::new(caller, verb, resource, instance);
        if let Some(allowed) = self.cache.get(&key) {
            return Ok(allowed);
        }
        let asked = Instant::now();
        let answer = self
            .reviews
            .create(
                &PostParams::default(),
                &instance_access_review(caller, verb, resource, instance),
            )
            .await
            .map_err(|e| {
                AccessError::Unavailable(format!(
                    "SubjectAccessReview on the host cluster failed: {e}"
                ))
            })?;
        let allowed = answer
            .status
            .as_ref()
            .is_some_and(|s| s.allowed && s.denied != Some(true));
        tracing::debug!(
            user = %caller.user,
            verb = verb.as_str(),
            resource = resource.as_str(),
            instance = instance.unwrap_or("*"),
            allowed,
            "instance access reviewed"
        );
        self.cache
            .insert_at(key, allowed, asked, self.config.ttl(allowed));
        Ok(allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(user: &str, groups: &[&str]) -> Caller {
        Caller::new(user, groups.iter().map(|g| g.to_string()).collect())
    }

    #[test]
    fn review_keys_ignore_group_order_and_tell_verbs_resources_and_instances_apart() {
        use InstanceResource::{Instances, Proxy};
        let base = ReviewKey::new(&caller("u", &["b", "a"]), Verb::Get, Instances, Some("i1"));
        let cases = [
            (
                caller("u", &["a", "b"]),
                Verb::Get,
                Instances,
                Some("i1"),
                true,
            ),
            (
                caller("u", &["a", "b", "a"]),
                Verb::Get,
                Instances,
                Some("i1"),
                true,
            ),
            (
                caller("v", &["a", "b"]),
                Verb::Get,
                Instances,
                Some("i1"),
                false,
            ),
            (caller("u", &["a"]), Verb::Get, Instances, Some("i1"), false),
            (
                caller("u", &["a", "b"]),
                Verb::List,
                Instances,
                Some("i1"),
                false,
            ),
            (
                caller("u", &["a", "b"]),
                Verb::Get,
                Proxy,
                Some("i1"),
                false,
            ),
            (
                caller("u", &["a", "b"]),
                Verb::Get,
                Instances,
                Some("i2"),
                false,
            ),
            (caller("u", &["a", "b"]), Verb::Get, Instances, None, false),
        ];
        for (c, verb, resource, instance, same) in cases {
            let key = ReviewKey::new(&c, verb, resource, instance);
            assert_eq!(key == base, same, "{key:?}");
        }
        assert_eq!(base.groups, ["a", "b"]);
    }

    #[test]
    fn reviews_ask_about_kairship_instances() {
        let mut c = caller("alice", &["dev"]);
        c.uid = Some("u1".into());
        for (verb, resource, instance, subresource) in [
            (Verb::Patch, InstanceResource::Instances, Some("prod"), None),
            (Verb::List, InstanceResource::Instances, None, None),
            (
                Verb::Create,
                InstanceResource::Proxy,
                Some("prod"),
                Some("proxy"),
            ),
        ] {
            let review = instance_access_review(&c, verb, resource, instance);
            let spec = &review.spec;
            assert_eq!(spec.user.as_deref(), Some("alice"));
            assert_eq!(spec.groups.as_deref(), Some(&["dev".to_string()][..]));
            assert_eq!(spec.uid.as_deref(), Some("u1"));
            let attrs = spec.resource_attributes.as_ref().unwrap();
            assert_eq!(attrs.group.as_deref(), Some("kairship.io"));
            assert_eq!(attrs.resource.as_deref(), Some("instances"));
            assert_eq!(attrs.subresource.as_deref(), subresource);
            assert_eq!(attrs.verb.as_deref(), Some(verb.as_str()));
            assert_eq!(attrs.name.as_deref(), instance);
            assert_eq!(attrs.namespace, None);
        }
    }
}
