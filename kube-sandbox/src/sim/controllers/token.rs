//! The token controller: a `kubernetes.io/service-account-token` Secret that names an existing
//! ServiceAccount (annotation `kubernetes.io/service-account.name`) gets `token` (a token that
//! authenticates as that ServiceAccount), `ca.crt` and `namespace`, and the ServiceAccount's
//! UID in `kubernetes.io/service-account.uid`, as kube-controller-manager's
//! `serviceaccount-token-controller` fills legacy token Secrets. A Secret whose ServiceAccount
//! does not exist (or was re-created with another UID) is deleted, as upstream does.

use super::Pass;
use super::objects::{Writer, at, name_of, namespace_of, str_at, uid_of};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use std::collections::HashMap;

const MANAGER: &str = "kube-controller-manager";
/// The Secret type the controller fills.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the ServiceAccount.
pub const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation holding the ServiceAccount's UID.
pub const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// Legacy tokens do not expire; the sandbox's signed tokens carry an expiry, so a far one.
const LEGACY_TOKEN_SECONDS: i64 = 10 * 365 * 24 * 3600;

/// What to do with one token Secret.
#[derive(Debug, PartialEq, Eq)]
pub enum Action {
    /// Filled already, or not a Secret this controller handles.
    Nothing,
    /// Give it a token of the ServiceAccount with this UID.
    Fill {
        /// The ServiceAccount's UID.
        sa_uid: String,
    },
    /// Its ServiceAccount is gone (or is another one now): delete the Secret.
    Delete,
}

/// What `secret` needs, given the UIDs of the ServiceAccounts of its namespace by name.
pub fn decide(secret: &Value, service_accounts: &HashMap<String, String>) -> Action {
    if str_at(secret, &["type"]) != TOKEN_SECRET_TYPE || super::objects::is_deleting(secret) {
        return Action::Nothing;
    }
    let sa = str_at(secret, &["metadata", "annotations", SA_NAME_ANNOTATION]);
    let Some(sa_uid) = service_accounts.get(sa) else {
        return Action::Delete;
    };
    let recorded = str_at(secret, &["metadata", "annotations", SA_UID_ANNOTATION]);
    if !recorded.is_empty() && recorded != sa_uid {
        return Action::Delete;
    }
    let has_token = at(secret, &["data", "token"])
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    if has_token && recorded == sa_uid {
        Action::Nothing
    } else {
        Action::Fill {
            sa_uid: sa_uid.clone(),
        }
    }
}

/// Fills or deletes every token Secret that needs it.
pub fn sync_all(pass: &Pass) {
    let secrets: Vec<Value> = pass
        .list("", "secrets")
        .into_iter()
        .filter(|s| str_at(s, &["type"]) == TOKEN_SECRET_TYPE)
        .collect();
    if secrets.is_empty() {
        return;
    }
    let mut accounts: HashMap<String, HashMap<String, String>> = HashMap::new();
    for sa in pass.list("", "serviceaccounts") {
        accounts
            .entry(namespace_of(&sa).to_owned())
            .or_default()
            .insert(name_of(&sa).to_owned(), uid_of(&sa).to_owned());
    }
    let none = HashMap::new();
    let writer = Writer {
        state: pass.state,
        manager: MANAGER,
    };
    let ca = pass.state.pki().ok().map(|p| p.ca_pem().to_owned());
    for secret in &secrets {
        let namespace = namespace_of(secret);
        match decide(secret, accounts.get(namespace).unwrap_or(&none)) {
            Action::Nothing => {}
            // Another pass retries a write that lost a race.
            Action::Delete => {
                let _ = writer.delete("", "secrets", secret);
            }
            Action::Fill { sa_uid } => {
                let sa = str_at(secret, &["metadata", "annotations", SA_NAME_ANNOTATION]);
                let token = match pass.state.auth.issue_token(
                    namespace,
                    sa,
                    &sa_uid,
                    &[],
                    LEGACY_TOKEN_SECONDS,
                    None,
                ) {
                    Ok((token, _)) => token,
                    Err(error) => {
                        tracing::warn!(%error, "cannot sign a service-account token");
                        continue;
                    }
                };
                let ca = ca.clone();
                let namespace = namespace.to_owned();
                let _ = writer.update("", "secrets", secret, None, move |s| {
                    s["metadata"]["annotations"][SA_UID_ANNOTATION] = json!(sa_uid);
                    if !s["data"].is_object() {
                        s["data"] = json!({});
                    }
                    s["data"]["token"] = json!(STANDARD.encode(token));
                    s["data"]["namespace"] = json!(STANDARD.encode(namespace));
                    if let Some(ca) = ca {
                        s["data"]["ca.crt"] = json!(STANDARD.encode(ca));
                    }
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(sa: &str, uid: Option<&str>, token: Option<&str>) -> Value {
        let mut annotations = json!({SA_NAME_ANNOTATION: sa});
        if let Some(uid) = uid {
            annotations[SA_UID_ANNOTATION] = json!(uid);
        }
        let mut s = json!({"type": TOKEN_SECRET_TYPE, "metadata": {"name": "t", "namespace": "ns", "annotations": annotations}});
        if let Some(token) = token {
            s["data"] = json!({"token": token});
        }
        s
    }

    #[test]
    fn token_secrets_are_filled_kept_or_deleted() {
        let accounts: HashMap<String, String> = [("sa".to_owned(), "u1".to_owned())].into();
        let fill = Action::Fill {
            sa_uid: "u1".into(),
        };
        let cases = [
            (secret("sa", None, None), fill),
            (
                secret("sa", Some("u1"), None),
                Action::Fill {
                    sa_uid: "u1".into(),
                },
            ),
            (secret("sa", Some("u1"), Some("dG9r")), Action::Nothing),
            (secret("sa", Some("old"), Some("dG9r")), Action::Delete),
            (secret("gone", None, None), Action::Delete),
            (
                json!({"type": "Opaque", "metadata": {"name": "x"}}),
                Action::Nothing,
            ),
        ];
        for (secret, want) in cases {
            assert_eq!(decide(&secret, &accounts), want, "{secret}");
        }
    }
}
