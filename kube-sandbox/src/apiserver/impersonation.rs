//! User impersonation, as kube-apiserver's impersonation filter does it: the
//! `Impersonate-User`, `Impersonate-Uid`, `Impersonate-Group` and `Impersonate-Extra-<key>`
//! headers make an authenticated requester act as another user, provided RBAC lets the
//! requester `impersonate` each of them (`users`, `serviceaccounts` for service-account names,
//! `groups`, `authentication.k8s.io` `uids` and `userextras/<key>`).

use crate::apiserver::auth::{self, Attributes, UserInfo};
use crate::apiserver::error::ApiError;
use crate::apiserver::store::Store;
use http::HeaderMap;

const USER: &str = "impersonate-user";
const UID: &str = "impersonate-uid";
const GROUP: &str = "impersonate-group";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// What the impersonation headers of a request ask for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Requested {
    /// `Impersonate-User`.
    pub user: String,
    /// `Impersonate-Uid`, if given.
    pub uid: Option<String>,
    /// Every `Impersonate-Group`.
    pub groups: Vec<String>,
    /// `Impersonate-Extra-<key>` values, by key (percent-decoded, lower case).
    pub extra: Vec<(String, String)>,
}

/// Reads the impersonation headers: `None` when there are none; an error when groups, a uid
/// or extras are asked for without a user (kube-apiserver answers that with an internal error).
pub fn requested(headers: &HeaderMap) -> Result<Option<Requested>, String> {
    let mut wanted = Requested::default();
    let mut any = false;
    for (name, value) in headers {
        let name = name.as_str();
        let value = value
            .to_str()
            .map_err(|_| format!("the {name} header is not text"))?
            .to_owned();
        if name == USER {
            wanted.user = value;
            any = true;
        } else if name == UID {
            wanted.uid = Some(value);
            any = true;
        } else if name == GROUP {
            wanted.groups.push(value);
            any = true;
        } else if let Some(key) = name.strip_prefix(EXTRA_PREFIX) {
            wanted.extra.push((percent_decode(key), value));
            any = true;
        }
    }
    if !any {
        return Ok(None);
    }
    if wanted.user.is_empty() {
        return Err(
            "requested impersonation of groups, a uid or extras without impersonating a user"
                .into(),
        );
    }
    Ok(Some(wanted))
}

/// The checks impersonating `wanted` takes, one per impersonated attribute.
pub fn checks(wanted: &Requested) -> Vec<Attributes> {
    let impersonate =
        |group: &str, resource: &str, subresource: &str, namespace: &str, name: &str| Attributes {
            verb: "impersonate".into(),
            group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            path: None,
        };
    let mut out = Vec::new();
    match service_account_of(&wanted.user) {
        Some((namespace, name)) => {
            out.push(impersonate("", "serviceaccounts", "", namespace, name))
        }
        None => out.push(impersonate("", "users", "", "", &wanted.user)),
    }
    for group in &wanted.groups {
        out.push(impersonate("", "groups", "", "", group));
    }
    if let Some(uid) = &wanted.uid {
        out.push(impersonate("authentication.k8s.io", "uids", "", "", uid));
    }
    for (key, value) in &wanted.extra {
        out.push(impersonate(
            "authentication.k8s.io",
            "userextras",
            key,
            "",
            value,
        ));
    }
    out
}

/// The user a request acts as, and who impersonates it: `requester` itself without
/// impersonation headers, else the impersonated user once every check passes (403 naming the
/// first that does not).
pub fn acting_user(
    store: &Store,
    requester: UserInfo,
    headers: &HeaderMap,
) -> Result<(UserInfo, Option<String>), ApiError> {
    let wanted = match requested(headers) {
        Ok(None) => return Ok((requester, None)),
        Ok(Some(wanted)) => wanted,
        Err(message) => return Err(ApiError::internal(&message)),
    };
    for check in checks(&wanted) {
        if !auth::authorize(store, &requester, &check).0 {
            // The impersonation filter answers with `responsewriters.Forbidden` on the
            // acting-as attributes, as any denied request.
            return Err(ApiError::denied(
                &requester.username,
                "impersonate",
                &check.group,
                &check.resource,
                &check.subresource,
                &check.namespace,
                &check.name,
            ));
        }
    }
    let mut groups = wanted.groups;
    // A service account's groups come with it, as kube-apiserver adds them.
    if groups.is_empty()
        && let Some((namespace, _)) = service_account_of(&wanted.user)
    {
        groups.push("system:serviceaccounts".into());
        groups.push(format!("system:serviceaccounts:{namespace}"));
    }
    let group_refs: Vec<&str> = groups.iter().map(String::as_str).collect();
    let mut user = if wanted.user == "system:anonymous" {
        UserInfo {
            username: wanted.user.clone(),
            uid: String::new(),
            groups,
        }
    } else {
        UserInfo::new(&wanted.user, &group_refs)
    };
    user.uid = wanted.uid.unwrap_or_default();
    Ok((user, Some(requester.username)))
}

/// `(namespace, name)` of a service account's user name (`system:serviceaccount:ns:name`).
fn service_account_of(user: &str) -> Option<(&str, &str)> {
    user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?.split_once(':')
}

/// Header names carry extra keys percent-encoded (`Impersonate-Extra-acme.com%2Fproject`).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Ok(hex) = std::str::from_utf8(hex)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn headers_table() {
        type Case = (
            Vec<(&'static str, &'static str)>,
            Result<Option<Requested>, ()>,
        );
        let cases: Vec<Case> = vec![
            (vec![], Ok(None)),
            (vec![("Accept", "application/json")], Ok(None)),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Group", "dev"),
                    ("Impersonate-Group", "ops"),
                ],
                Ok(Some(Requested {
                    user: "jane".into(),
                    groups: vec!["dev".into(), "ops".into()],
                    ..Requested::default()
                })),
            ),
            (
                vec![
                    ("Impersonate-User", "jane"),
                    ("Impersonate-Uid", "u-1"),
                    ("Impersonate-Extra-acme.com%2Fteam", "red"),
                ],
                Ok(Some(Requested {
                    user: "jane".into(),
                    uid: Some("u-1".into()),
                    extra: vec![("acme.com/team".into(), "red".into())],
                    ..Requested::default()
                })),
            ),
            (vec![("Impersonate-Group", "dev")], Err(())),
        ];
        for (pairs, want) in cases {
            let got = requested(&headers(&pairs)).map_err(|_| ());
            assert_eq!(got, want, "{pairs:?}");
        }
    }

    #[test]
    fn checks_name_each_impersonated_attribute() {
        let wanted = Requested {
            user: "system:serviceaccount:team:builder".into(),
            uid: Some("u-1".into()),
            groups: vec!["dev".into()],
            extra: vec![("scopes".into(), "view".into())],
        };
        let got: Vec<(String, String, String, String, String)> = checks(&wanted)
            .into_iter()
            .map(|a| (a.group, a.resource, a.subresource, a.namespace, a.name))
            .collect();
        let want = [
            ("", "serviceaccounts", "", "team", "builder"),
            ("", "groups", "", "", "dev"),
            ("authentication.k8s.io", "uids", "", "", "u-1"),
            ("authentication.k8s.io", "userextras", "scopes", "", "view"),
        ];
        assert_eq!(got.len(), want.len());
        for (got, want) in got.iter().zip(want) {
            assert_eq!(
                (
                    got.0.as_str(),
                    got.1.as_str(),
                    got.2.as_str(),
                    got.3.as_str(),
                    got.4.as_str()
                ),
                want
            );
        }
        assert_eq!(
            checks(&Requested {
                user: "jane".into(),
                ..Requested::default()
            })[0]
                .resource,
            "users"
        );
    }

    #[test]
    fn percent_decoding_keeps_malformed_escapes() {
        assert_eq!(percent_decode("acme.com%2fteam"), "acme.com/team");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("a%zzb"), "a%zzb");
    }
}
