//! instance-registry: for each instance, the ClusterRoles `kairship:instance:<name>:admin|edit|
//! view` on the host cluster, and an announcement to the [`GlobalRegistry`] (no-op by default,
//! or an HTTP endpoint). Deleting the instance removes its roles, the bindings to them, and the
//! registry entry ([`cleanup`], called by the lifecycle controller).

pub mod rbac;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use kube_kit::client::is_not_found;
use serde::{Deserialize, Serialize};

use kube_kit::conditions::set_condition;

use super::status::update_status;
use super::{Context, Error, MANAGER_NAME};
use crate::instance::{Instance, InstanceMode, condition_type};
use rbac::{
    InstanceRole, cluster_role_name, instance_cluster_roles, instance_role_names,
    owned_by_instance_selector, refers_to_cluster_role,
};

/// Controller name (metrics, events).
pub const NAME: &str = "instance-registry";

/// How often roles and the registry entry are re-asserted without any change.
const RESYNC: Duration = Duration::from_secs(300);

/// Page size when listing every binding on the host.
const LIST_PAGE: u32 = 500;

/// What the global registry learns about an instance.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RegistryEntry {
    /// Instance name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// `Provision` or `Adopt`.
    pub mode: InstanceMode,
    /// The ClusterRoles that grant access to the instance, most powerful first.
    pub cluster_roles: Vec<String>,
}

impl RegistryEntry {
    /// The entry of `instance`.
    pub fn of(instance: &Instance) -> Self {
        let name = instance.name_any();
        Self {
            cluster_roles: InstanceRole::ALL
                .iter()
                .map(|r| cluster_role_name(&name, *r))
                .collect(),
            alias: instance.spec.alias.clone(),
            mode: instance.spec.mode,
            name,
        }
    }
}

/// Why the global registry did not take an announcement.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The request could not be sent or got no answer.
    #[error("{method} {url}: {reason}")]
    Transport {
        /// HTTP method.
        method: &'static str,
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The registry answered with an error status.
    #[error("{method} {url}: registry answered {status}")]
    Status {
        /// HTTP method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
    },
}

/// A catalogue of instances outside the host cluster (an IAM that binds roles to instances).
#[async_trait]
pub trait GlobalRegistry: Send + Sync {
    /// Records (or refreshes) an instance; must be idempotent.
    async fn announce(&self, entry: &RegistryEntry) -> Result<(), RegistryError>;
    /// Forgets an instance; forgetting an unknown instance succeeds.
    async fn withdraw(&self, instance: &str) -> Result<(), RegistryError>;
}

/// The default registry: Kubernetes RBAC on the host is the only catalogue.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopRegistry;

#[async_trait]
impl GlobalRegistry for NoopRegistry {
    async fn announce(&self, _entry: &RegistryEntry) -> Result<(), RegistryError> {
        Ok(())
    }
    async fn withdraw(&self, _instance: &str) -> Result<(), RegistryError> {
        Ok(())
    }
}

/// A registry reached over HTTP: `PUT {base}/instances/{name}` with the JSON entry and
/// `DELETE {base}/instances/{name}` (404 counts as done), with an optional bearer token.
#[derive(Clone)]
pub struct HttpRegistry {
    client: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl std::fmt::Debug for HttpRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpRegistry")
            .field("base", &self.base)
            .finish()
    }
}

impl HttpRegistry {
    /// A registry at `base` (e.g. `https://iam.example.com/kairship`), each request limited to
    /// `timeout`.
    pub fn new(
        base: &str,
        token: Option<String>,
        timeout: Duration,
    ) -> Result<Self, RegistryError> {
        kube_kit::client::install_crypto_provider();
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| RegistryError::Transport {
                method: "-",
                url: base.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            client,
            base: base.trim_end_matches('/').to_owned(),
            token,
        })
    }

    fn url(&self, instance: &str) -> String {
        format!("{}/instances/{instance}", self.base)
    }

    async fn send(
        &self,
        method: &'static str,
        url: String,
        request: reqwest::RequestBuilder,
        not_found_ok: bool,
    ) -> Result<(), RegistryError> {
        let request = match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request.send().await.map_err(|e| RegistryError::Transport {
            method,
            url: url.clone(),
            reason: e.without_url().to_string(),
        })?;
        let status = response.status();
        if status.is_success() || (not_found_ok && status == reqwest::StatusCode::NOT_FOUND) {
            Ok(())
        } else {
            Err(RegistryError::Status {
                method,
                url,
                status: status.as_u16(),
            })
        }
    }
}

#[async_trait]
impl GlobalRegistry for HttpRegistry {
    async fn announce(&self, entry: &RegistryEntry) -> Result<(), RegistryError> {
        let url = self.url(&entry.name);
        let request = self.client.put(&url).json(entry);
        self.send("PUT", url, request, false).await
    }

    async fn withdraw(&self, instance: &str) -> Result<(), RegistryError> {
        let url = self.url(instance);
        let request = self.client.delete(&url);
        self.send("DELETE", url, request, true).await
    }
}

/// Whether the stored role grants what the desired one does (labels and rules).
fn role_up_to_date(existing: &ClusterRole, desired: &ClusterRole) -> bool {
    existing.rules == desired.rules
        && desired
            .labels()
            .iter()
            .all(|(k, v)| existing.labels().get(k) == Some(v))
}

/// Reconciles one Instance.
pub async fn reconcile(instance: Arc<Instance>, ctx: Arc<Context>) -> Result<Action, Error> {
    if instance.is_deleting() {
        return Ok(Action::await_change());
    }
    let name = instance.name_any();
    let roles: Api<ClusterRole> = Api::all(ctx.host.clone());
    let owner: Vec<_> = instance.controller_owner_ref(&()).into_iter().collect();
    for mut role in instance_cluster_roles(&name) {
        let role_name = role.name_any();
        let existing = roles
            .get_opt(&role_name)
            .await
            .map_err(Error::kube("read ClusterRole", &role_name))?;
        if existing.is_some_and(|e| role_up_to_date(&e, &role)) {
            continue;
        }
        role.metadata.owner_references = Some(owner.clone());
        roles
            .patch(
                &role_name,
                &PatchParams::apply(MANAGER_NAME).force(),
                &Patch::Apply(&role),
            )
            .await
            .map_err(Error::kube("apply ClusterRole", &role_name))?;
    }
    let announced = ctx.registry.announce(&RegistryEntry::of(&instance)).await;
    let (ok, why, message) = match &announced {
        Ok(()) => (
            true,
            "RolesReady",
            "roles exist and the registry knows the instance".to_owned(),
        ),
        Err(err) => (false, "RegistryFailed", err.to_string()),
    };
    update_status(&ctx.instances(), &name, |fresh, status| {
        set_condition(
            &mut status.conditions,
            condition_type::ROLES_READY,
            ok,
            why,
            &message,
            fresh.metadata.generation,
            jiff::Timestamp::now(),
        );
    })
    .await?;
    announced?;
    Ok(Action::requeue(RESYNC))
}

/// Removes the roles of `instance`, every binding to them, and the registry entry.
///
/// Bindings go first: the ClusterRoleBindings Kairship labelled, and every ClusterRoleBinding
/// and RoleBinding (any namespace) whose `roleRef` names one of the instance's ClusterRoles.
/// Deleting the roles alone would leave such bindings inert only until an instance of the same
/// name re-creates roles of the same names. The role names are recovered from the instance
/// name and the stored roles, so a cleanup interrupted midway is simply run again.
pub async fn cleanup(ctx: &Context, instance: &str) -> Result<(), Error> {
    let selector = ListParams::default().labels(&owned_by_instance_selector(instance));
    let roles: Api<ClusterRole> = Api::all(ctx.host.clone());
    let stored = roles
        .list_metadata(&selector)
        .await
        .map_err(Error::kube("list ClusterRoles of instance", instance))?;
    let role_names = instance_role_names(instance, stored.items.iter().map(|r| r.name_any()));

    let cluster_bindings: Api<ClusterRoleBinding> = Api::all(ctx.host.clone());
    cluster_bindings
        .delete_collection(&DeleteParams::default(), &selector)
        .await
        .map_err(Error::kube(
            "delete ClusterRoleBindings of instance",
            instance,
        ))?;
    for binding in list_all(&cluster_bindings, "list ClusterRoleBindings").await? {
        if refers_to_cluster_role(&binding.role_ref, &role_names) {
            let name = binding.name_any();
            delete_if_present(&cluster_bindings, &name, "delete ClusterRoleBinding", &name).await?;
        }
    }
    let all_bindings: Api<RoleBinding> = Api::all(ctx.host.clone());
    for binding in list_all(&all_bindings, "list RoleBindings").await? {
        if refers_to_cluster_role(&binding.role_ref, &role_names) {
            let name = binding.name_any();
            let namespace = binding.namespace().unwrap_or_default();
            let api: Api<RoleBinding> = Api::namespaced(ctx.host.clone(), &namespace);
            let object = kube_kit::controller::object_key(&binding);
            delete_if_present(&api, &name, "delete RoleBinding", &object).await?;
        }
    }

    roles
        .delete_collection(&DeleteParams::default(), &selector)
        .await
        .map_err(Error::kube("delete ClusterRoles of instance", instance))?;
    // Roles of these names that lost their labels would still be granted by new bindings.
    for name in &role_names {
        delete_if_present(&roles, name, "delete ClusterRole", name).await?;
    }
    ctx.registry.withdraw(instance).await?;
    Ok(())
}

/// Bindings listed a page at a time (RBAC objects can be many on a shared host).
async fn list_all<K>(api: &Api<K>, action: &'static str) -> Result<Vec<K>, Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(LIST_PAGE);
    loop {
        let page = api.list(&params).await.map_err(Error::kube(action, "*"))?;
        items.extend(page.items);
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(items),
        }
    }
}

/// Deletes `name`; an object already gone counts as deleted.
async fn delete_if_present<K>(
    api: &Api<K>,
    name: &str,
    action: &'static str,
    object: &str,
) -> Result<(), Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(err) if is_not_found(&err) => Ok(()),
        Err(source) => Err(Error::Kube {
            action,
            object: object.to_owned(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::rbac::instance_cluster_role;
    use super::*;

    #[test]
    fn role_comparison() {
        let desired = instance_cluster_role("prod", InstanceRole::View);
        assert!(role_up_to_date(&desired, &desired));
        let mut other_rules = desired.clone();
        other_rules.rules = Some(vec![]);
        assert!(!role_up_to_date(&other_rules, &desired));
        let mut extra_label = desired.clone();
        extra_label.labels_mut().insert("team".into(), "a".into());
        assert!(
            role_up_to_date(&extra_label, &desired),
            "foreign labels are kept"
        );
    }

    #[test]
    fn entry_lists_roles() {
        let instance = Instance::new(
            "prod",
            crate::instance::InstanceSpec {
                mode: InstanceMode::Adopt,
                kubeconfig_secret_ref: None,
                provision: None,
                alias: Some("Production".into()),
                deletion_policy: Default::default(),
            },
        );
        let entry = RegistryEntry::of(&instance);
        assert_eq!(
            entry.cluster_roles,
            [
                "kairship:instance:prod:admin",
                "kairship:instance:prod:edit",
                "kairship:instance:prod:view"
            ]
        );
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(json["clusterRoles"][2], "kairship:instance:prod:view");
        assert_eq!(json["mode"], "Adopt");
    }
}
