//! The authenticated user, shared by the authenticators (`auth.rs`, `bootstrap_token.rs`) and
//! everything that authorizes or impersonates.

/// An authenticated user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    /// `admin`, `system:serviceaccount:ns:name`, ...
    pub username: String,
    /// A stable id.
    pub uid: String,
    /// Groups, always including `system:authenticated`.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A user with the given name and groups (plus `system:authenticated`).
    pub fn new(username: &str, groups: &[&str]) -> Self {
        let mut all: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        if !all.iter().any(|g| g == "system:authenticated") {
            all.push("system:authenticated".into());
        }
        UserInfo {
            username: username.to_string(),
            uid: format!("uid-{username}"),
            groups: all,
        }
    }

    /// Whether the user is a cluster superuser.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }
}
