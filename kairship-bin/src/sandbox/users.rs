//! The sandbox's two users: random bearer tokens known to the API server as static tokens,
//! and ClusterRoleBindings on the host to the per-instance roles the controller-manager keeps,
//! so that SubjectAccessReview on the host decides what each may do.

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kairship_core::access::Caller;
use kairship_core::auth::{StaticTokenAuthenticator, TokenEntry};
use kairship_core::rbac::{InstanceRole, SubjectKind, cluster_role_binding, cluster_role_name};
use kube::api::PostParams;
use kube::{Api, Client};

/// One sandbox user.
pub struct User {
    /// Short name, also the stem of its files (`<name>.token`, `<name>.kubeconfig`).
    pub name: &'static str,
    /// User name the API server knows it by.
    pub user: &'static str,
    /// Role on each instance it may reach.
    pub role: InstanceRole,
    /// Instances it is bound to.
    pub instances: Vec<String>,
    /// Its bearer token (never printed).
    token: String,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User")
            .field("name", &self.name)
            .field("user", &self.user)
            .field("role", &self.role)
            .field("instances", &self.instances)
            .finish_non_exhaustive()
    }
}

impl User {
    /// A user with a fresh random token.
    pub fn new(
        name: &'static str,
        user: &'static str,
        role: InstanceRole,
        instances: Vec<String>,
    ) -> anyhow::Result<User> {
        Ok(User {
            name,
            user,
            role,
            instances,
            token: random_token()?,
        })
    }

    /// The bearer token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Where its token is written in `dir`.
    pub fn token_path(&self, dir: &Path) -> std::path::PathBuf {
        dir.join(format!("{}.token", self.name))
    }

    /// Where its issued kubeconfig is written in `dir`.
    pub fn kubeconfig_path(&self, dir: &Path) -> std::path::PathBuf {
        dir.join(format!("{}.kubeconfig", self.name))
    }
}

/// 32 random bytes from the system generator, hex-encoded.
pub fn random_token() -> anyhow::Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("the system random generator failed"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes `contents` to `path` readable by the owner only. A file left by an earlier run is
/// replaced rather than reopened, so it cannot keep wider permissions.
pub fn write_private(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("replacing {}", path.display())),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(contents)
        .with_context(|| format!("writing {}", path.display()))
}

/// The static-token authenticator knowing `users`.
pub fn authenticator(users: &[User]) -> StaticTokenAuthenticator {
    StaticTokenAuthenticator::new(
        users
            .iter()
            .map(|u| TokenEntry {
                token: u.token.clone(),
                caller: Caller {
                    user: u.user.to_owned(),
                    groups: Vec::new(),
                    uid: Some(format!("uid-{}", u.user)),
                },
            })
            .collect(),
    )
}

/// Binds every user to its role on its instances (the bindings the role-binding webhook would
/// create, removed with their instance).
pub async fn bind(host: &Client, users: &[User]) -> anyhow::Result<()> {
    let api: Api<ClusterRoleBinding> = Api::all(host.clone());
    for user in users {
        for instance in &user.instances {
            let binding = cluster_role_binding(instance, user.role, SubjectKind::User, user.user);
            api.create(&PostParams::default(), &binding)
                .await
                .with_context(|| format!("binding {} to {instance}", user.user))?;
        }
    }
    Ok(())
}

/// Lets `user` create, list and delete Instances, and reach the instances it creates, as a
/// platform team's Kairship administrator would be allowed (instance roles only cover the
/// instances that exist).
pub async fn grant_instance_admin(host: &Client, user: &str) -> anyhow::Result<()> {
    let name = "kairship-sandbox:instance-admin";
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "rules": [{"apiGroups": ["kairship.io"], "resources": ["instances", "instances/proxy"], "verbs": ["*"]}],
    }))?;
    Api::<ClusterRole>::all(host.clone())
        .create(&PostParams::default(), &role)
        .await
        .with_context(|| format!("creating ClusterRole {name}"))?;
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("{name}:{user}")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }))?;
    Api::<ClusterRoleBinding>::all(host.clone())
        .create(&PostParams::default(), &binding)
        .await
        .with_context(|| format!("binding {user} to {name}"))?;
    Ok(())
}

/// Waits (bounded) until the controller-manager has created the roles `users` are bound to:
/// until then every check would be denied.
pub async fn wait_for_roles(host: &Client, users: &[User]) -> anyhow::Result<()> {
    let api: Api<ClusterRole> = Api::all(host.clone());
    let names: Vec<String> = users
        .iter()
        .flat_map(|u| u.instances.iter().map(|i| cluster_role_name(i, u.role)))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for name in names {
        while api.get_opt(&name).await?.is_none() {
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!("the controller-manager did not create ClusterRole {name}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// What `role` may do inside an instance: the rules the instance's own RBAC gives a user of
/// that role, so that writes made as the user (impersonated) are decided there too.
fn inside_rules(role: InstanceRole) -> serde_json::Value {
    let verbs = match role {
        InstanceRole::View => serde_json::json!(["get", "list", "watch"]),
        _ => serde_json::json!(["*"]),
    };
    serde_json::json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": verbs}])
}

/// Grants every user of `instance` its role inside the instance, as a platform team does for
/// Kairship's impersonated writes (docs/kairship/access.md).
pub async fn grant_inside(
    instance_client: &Client,
    instance: &str,
    users: &[User],
) -> anyhow::Result<()> {
    let roles: Api<ClusterRole> = Api::all(instance_client.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(instance_client.clone());
    for user in users
        .iter()
        .filter(|u| u.instances.iter().any(|i| i == instance))
    {
        let role_name = format!("kairship-sandbox:{}", user.role.as_str());
        let role: ClusterRole = serde_json::from_value(serde_json::json!({
            "metadata": {"name": role_name},
            "rules": inside_rules(user.role),
        }))?;
        match roles.create(&PostParams::default(), &role).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e).with_context(|| format!("creating {role_name} in {instance}")),
        }
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("kairship-sandbox:{}", user.user)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.user}],
        }))?;
        bindings
            .create(&PostParams::default(), &binding)
            .await
            .with_context(|| format!("binding {} inside {instance}", user.user))?;
    }
    Ok(())
}
