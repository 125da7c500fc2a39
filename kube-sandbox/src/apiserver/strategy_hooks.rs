//! Write strategies of resources an embedder serves for an aggregated API server, registered
//! through [`ClusterOptions::strategy_hooks`](crate::ClusterOptions::strategy_hooks). An
//! aggregated API server (Karmada's `clusters`, say) validates and canonicalizes its own
//! objects in its registry strategy; the sandbox holds such a resource as a CRD and leaves
//! those rules to the embedder, called on every create and on every update of the object
//! (not of its `status`), after the CRD's schema and before the object is stored.

use crate::apiserver::error::ApiError;
use crate::apiserver::resources::GroupResource;
use serde_json::Value;
use std::sync::Arc;

/// A strategy: checks `new` (against `old` on an update) and may rewrite it; an error is the
/// API server's answer.
pub trait StrategyHook: Send + Sync {
    /// Validates and canonicalizes one write.
    fn apply(&self, old: Option<&Value>, new: &mut Value) -> Result<(), ApiError>;
}

impl<F> StrategyHook for F
where
    F: Fn(Option<&Value>, &mut Value) -> Result<(), ApiError> + Send + Sync,
{
    fn apply(&self, old: Option<&Value>, new: &mut Value) -> Result<(), ApiError> {
        self(old, new)
    }
}

/// The strategies of a cluster, by group and resource.
#[derive(Clone, Default)]
pub struct StrategyHooks(Vec<(GroupResource, Arc<dyn StrategyHook>)>);

impl std::fmt::Debug for StrategyHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(gr, _)| gr))
            .finish()
    }
}

impl StrategyHooks {
    /// Adds (or replaces) the strategy of `plural` in `group` (empty for core).
    #[must_use]
    pub fn with(mut self, group: &str, plural: &str, hook: Arc<dyn StrategyHook>) -> Self {
        let key = GroupResource::new(group, plural);
        self.0.retain(|(gr, _)| *gr != key);
        self.0.push((key, hook));
        self
    }

    /// The strategy of `plural` in `group`, if one is registered.
    pub fn find(&self, group: &str, plural: &str) -> Option<Arc<dyn StrategyHook>> {
        let key = GroupResource::new(group, plural);
        self.0
            .iter()
            .find(|(gr, _)| *gr == key)
            .map(|(_, h)| h.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_are_found_by_group_and_resource_and_replaced() {
        let refuse: Arc<dyn StrategyHook> =
            Arc::new(|_: Option<&Value>, _: &mut Value| Err(ApiError::internal("no")));
        let mark: Arc<dyn StrategyHook> = Arc::new(|_: Option<&Value>, new: &mut Value| {
            new["marked"] = json!(true);
            Ok(())
        });
        let hooks = StrategyHooks::default()
            .with("example.com", "gizmos", refuse)
            .with("example.com", "gizmos", mark);
        assert!(hooks.find("example.com", "widgets").is_none());
        assert!(hooks.find("", "gizmos").is_none());
        let mut object = json!({});
        hooks
            .find("example.com", "gizmos")
            .unwrap()
            .apply(None, &mut object)
            .unwrap();
        assert_eq!(
            object["marked"], true,
            "the second registration replaced the first"
        );
    }
}
