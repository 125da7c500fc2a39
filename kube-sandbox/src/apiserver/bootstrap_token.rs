//! Bootstrap token authentication, as kube-apiserver's `--enable-bootstrap-token-auth` does it
//! (kubernetes `plugin/pkg/auth/authenticator/token/bootstrap/bootstrap.go`,
//! `TokenAuthenticator.AuthenticateToken`): a bearer token `<id>.<secret>` is checked against
//! the Secret `kube-system/bootstrap-token-<id>` of type `bootstrap.kubernetes.io/token`, and
//! authenticates as `system:bootstrap:<id>` in `system:bootstrappers` plus the Secret's
//! `auth-extra-groups`. Every failure is "not authenticated" (401), as upstream answers.

use crate::apiserver::resources::GroupResource;
use crate::apiserver::store::Store;
use crate::apiserver::user_info::UserInfo;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// Namespace of bootstrap token Secrets.
pub const NAMESPACE: &str = "kube-system";
/// Type of bootstrap token Secrets.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Prefix of their names.
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// The group every bootstrap token authenticates in.
pub const GROUP: &str = "system:bootstrappers";
/// Prefix of the user name.
pub const USER_PREFIX: &str = "system:bootstrap:";

/// The id and secret of a token of the form `[a-z0-9]{6}.[a-z0-9]{16}`
/// (cluster-bootstrap `token/util.BootstrapTokenRegexp`).
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

/// Whether an `auth-extra-groups` entry is allowed (cluster-bootstrap
/// `BootstrapGroupPattern`: `system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]`).
pub fn valid_group(group: &str) -> bool {
    let Some(rest) = group.strip_prefix("system:bootstrappers:") else {
        return false;
    };
    !rest.is_empty()
        && rest.len() <= 256
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
        && rest
            .bytes()
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn data(secret: &Value, key: &str) -> Option<String> {
    secret
        .pointer(&format!("/data/{key}"))
        .and_then(Value::as_str)
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
}

/// Constant-time comparison of the secret part (upstream uses `subtle.ConstantTimeCompare`).
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The user `token` names, judged against its Secret as it is stored, at time `now`.
pub fn user_of(secret: &Value, token: &str, now: jiff::Timestamp) -> Option<UserInfo> {
    let (id, token_secret) = parse_token(token)?;
    if secret.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    if secret.get("type").and_then(Value::as_str) != Some(SECRET_TYPE) {
        return None;
    }
    if !same_secret(&data(secret, "token-secret")?, token_secret) {
        return None;
    }
    if data(secret, "token-id").as_deref() != Some(id) {
        return None;
    }
    // An expiration that does not parse counts as expired (bootstrapsecretutil.HasExpired).
    if let Some(expiration) = data(secret, "expiration") {
        match expiration.parse::<jiff::Timestamp>() {
            Ok(at) if at > now => {}
            _ => return None,
        }
    }
    if data(secret, "usage-bootstrap-authentication").as_deref() != Some("true") {
        return None;
    }
    let mut groups = vec![GROUP.to_owned()];
    if let Some(extra) = data(secret, "auth-extra-groups") {
        for group in extra.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            // A malformed group makes upstream's GetGroups fail: not authenticated.
            if !valid_group(group) {
                return None;
            }
            if !groups.iter().any(|g| g == group) {
                groups.push(group.to_owned());
            }
        }
    }
    let group_refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    let mut user = UserInfo::new(&format!("{USER_PREFIX}{id}"), &group_refs);
    user.uid = String::new();
    Some(user)
}

/// Who a bearer token belongs to, if it is a valid bootstrap token of this cluster.
pub fn authenticate(store: &Store, token: &str) -> Option<UserInfo> {
    let (id, _) = parse_token(token)?;
    let secret = store.get(
        &GroupResource::new("", "secrets"),
        NAMESPACE,
        &format!("{SECRET_PREFIX}{id}"),
    )?;
    user_of(&secret.value, token, jiff::Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secret(fields: &[(&str, &str)], kind: &str) -> Value {
        let data: serde_json::Map<String, Value> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(STANDARD.encode(v))))
            .collect();
        json!({"type": kind, "metadata": {"name": "bootstrap-token-abcdef", "namespace": NAMESPACE}, "data": data})
    }

    const TOKEN: &str = "abcdef.0123456789abcdef";

    #[test]
    fn tokens_authenticate_as_kube_apiserver_does() {
        let now: jiff::Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let good = [
            ("token-id", "abcdef"),
            ("token-secret", "0123456789abcdef"),
            ("usage-bootstrap-authentication", "true"),
            ("expiration", "2030-01-02T00:00:00Z"),
            ("auth-extra-groups", "system:bootstrappers:kairship:edge-1"),
        ];
        let with = |key: &str, value: Option<&str>| -> Value {
            let mut fields: Vec<(&str, &str)> =
                good.iter().copied().filter(|(k, _)| *k != key).collect();
            if let Some(v) = value {
                fields.push((key, v));
            }
            secret(&fields, SECRET_TYPE)
        };
        let cases: Vec<(&str, Value, &str, Option<Vec<&str>>)> = vec![
            (
                "valid",
                with("", None),
                TOKEN,
                Some(vec![
                    "system:bootstrappers",
                    "system:bootstrappers:kairship:edge-1",
                    "system:authenticated",
                ]),
            ),
            (
                "no extra groups",
                with("auth-extra-groups", None),
                TOKEN,
                Some(vec!["system:bootstrappers", "system:authenticated"]),
            ),
            (
                "no expiration never expires",
                with("expiration", None),
                TOKEN,
                Some(vec![
                    "system:bootstrappers",
                    "system:bootstrappers:kairship:edge-1",
                    "system:authenticated",
                ]),
            ),
            (
                "expired",
                with("expiration", Some("2029-12-31T23:59:59Z")),
                TOKEN,
                None,
            ),
            (
                "expiration unreadable",
                with("expiration", Some("tomorrow")),
                TOKEN,
                None,
            ),
            (
                "wrong secret",
                with("", None),
                "abcdef.0123456789abcdee",
                None,
            ),
            ("wrong id", with("token-id", Some("abcdeg")), TOKEN, None),
            (
                "usage missing",
                with("usage-bootstrap-authentication", None),
                TOKEN,
                None,
            ),
            (
                "usage false",
                with("usage-bootstrap-authentication", Some("false")),
                TOKEN,
                None,
            ),
            (
                "extra group outside system:bootstrappers:",
                with("auth-extra-groups", Some("system:masters")),
                TOKEN,
                None,
            ),
            ("wrong type", secret(&good, "Opaque"), TOKEN, None),
            (
                "malformed token",
                with("", None),
                "abcdef-0123456789abcdef",
                None,
            ),
            (
                "upper case token",
                with("", None),
                "ABCDEF.0123456789abcdef",
                None,
            ),
        ];
        for (name, secret, token, want) in cases {
            let got = user_of(&secret, token, now);
            match want {
                Some(groups) => {
                    let user = got.unwrap_or_else(|| panic!("{name}: not authenticated"));
                    assert_eq!(user.username, "system:bootstrap:abcdef", "{name}");
                    assert_eq!(user.groups, groups, "{name}");
                }
                None => assert!(got.is_none(), "{name}: {got:?}"),
            }
        }
        let mut deleting = with("", None);
        deleting["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
        assert!(user_of(&deleting, TOKEN, now).is_none());
    }

    #[test]
    fn extra_groups_follow_the_bootstrap_pattern() {
        for (group, ok) in [
            ("system:bootstrappers:kairship:edge-1", true),
            ("system:bootstrappers:karmada:default-cluster-token", true),
            ("system:bootstrappers:", false),
            ("system:bootstrappers:a-", false),
            ("system:bootstrappers:Upper", false),
            ("system:masters", false),
        ] {
            assert_eq!(valid_group(group), ok, "{group}");
        }
    }
}
