//! Identity and access: bearer tokens (the admin token, static tokens, signed service-account
//! tokens from TokenRequest; bootstrap tokens are in `bootstrap_token.rs`), TokenReview, and authorization by the RBAC objects stored in the
//! cluster (SubjectAccessReview and every request), with `system:masters` allowed everything.

use crate::apiserver::resources::GroupResource;
use crate::apiserver::service_account_key::{KeyError, ServiceAccountKey};
use crate::apiserver::store::Store;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

pub use crate::apiserver::user_info::UserInfo;

/// What a request wants to do, as SubjectAccessReview describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    /// API group, empty for core.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource, empty if none.
    pub subresource: String,
    /// Namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// Object name, empty for collections.
    pub name: String,
    /// For non-resource requests: the path.
    pub path: Option<String>,
}

/// Tokens and signing key of one cluster.
pub struct Auth {
    admin_token: String,
    /// Made on the first token issued: most sandbox clusters never sign one, and an RSA key
    /// takes a noticeable moment to generate.
    service_account_key: OnceLock<Result<ServiceAccountKey, String>>,
    static_tokens: RwLock<HashMap<String, UserInfo>>,
}

impl Default for Auth {
    fn default() -> Self {
        Self::new()
    }
}

impl Auth {
    /// Fresh random admin token and signing key.
    pub fn new() -> Auth {
        let token: String = crate::apiserver::meta::random_bytes::<24>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Auth {
            admin_token: format!("sandbox-admin-{token}"),
            service_account_key: OnceLock::new(),
            static_tokens: RwLock::new(HashMap::new()),
        }
    }

    /// The token of the built-in `admin` user (group `system:masters`).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Adds a static bearer token for a user.
    pub fn add_token(&self, token: &str, user: UserInfo) {
        self.static_tokens
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.to_string(), user);
    }

    /// Who a bearer token belongs to, if anyone.
    pub fn authenticate(&self, token: &str) -> Option<UserInfo> {
        if token == self.admin_token {
            return Some(UserInfo::new("admin", &["system:masters"]));
        }
        if let Some(user) = self
            .static_tokens
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(token)
        {
            return Some(user.clone());
        }
        self.verify_service_account_token(token)
            .map(|claims| claims.user)
    }

    /// The service-account signing key, made on first use.
    pub fn service_account_key(&self) -> Result<&ServiceAccountKey, KeyError> {
        self.service_account_key
            .get_or_init(|| ServiceAccountKey::generate().map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| KeyError::new(e.clone()))
    }

    /// The JSON Web Key Set of the service-account key (`/openid/v1/jwks`).
    pub fn jwks(&self) -> Result<Value, KeyError> {
        Ok(self.service_account_key()?.jwks())
    }

    /// Issues a signed service-account token (TokenRequest): an RS256 JWT as kube-apiserver
    /// signs them, and its expiry time.
    pub fn issue_token(
        &self,
        namespace: &str,
        service_account: &str,
        sa_uid: &str,
        audiences: &[String],
        expiration_seconds: i64,
        bound_pod: Option<(&str, &str)>,
    ) -> Result<(String, String), KeyError> {
        let now = jiff::Timestamp::now().as_second();
        let exp = now + expiration_seconds.max(600);
        let mut k8s = json!({
            "namespace": namespace,
            "serviceaccount": {"name": service_account, "uid": sa_uid},
        });
        if let Some((pod, uid)) = bound_pod {
            k8s["pod"] = json!({"name": pod, "uid": uid});
        }
        let claims = json!({
            "iss": crate::apiserver::service_account_key::ISSUER,
            "sub": format!("system:serviceaccount:{namespace}:{service_account}"),
            "aud": audiences,
            "iat": now,
            "nbf": now,
            "exp": exp,
            "jti": crate::apiserver::meta::new_uid(),
            "kubernetes.io": k8s,
        });
        let token = self.service_account_key()?.sign(&claims)?;
        let expiry = jiff::Timestamp::from_second(exp)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        Ok((token, expiry))
    }

    fn verify_service_account_token(&self, token: &str) -> Option<TokenClaims> {
        // A cluster that never signed a token accepts none.
        let key = self.service_account_key.get()?.as_ref().ok()?;
        let claims = key.verify(token)?;
        let exp = claims.get("exp")?.as_i64()?;
        if exp < jiff::Timestamp::now().as_second() {
            return None;
        }
        let ns = claims.pointer("/kubernetes.io/namespace")?.as_str()?;
        let sa = claims
            .pointer("/kubernetes.io/serviceaccount/name")?
            .as_str()?;
        let uid = claims
            .pointer("/kubernetes.io/serviceaccount/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut user = UserInfo::new(
            &format!("system:serviceaccount:{ns}:{sa}"),
            &[
                "system:serviceaccounts",
                &format!("system:serviceaccounts:{ns}"),
            ],
        );
        user.uid = uid.to_string();
        let audiences = crate::apiserver::meta::string_list(claims.get("aud"));
        Some(TokenClaims { user, audiences })
    }

    /// Answers a TokenReview body (bootstrap tokens are checked against `store`, as
    /// kube-apiserver's authenticator chain does).
    pub fn token_review(&self, review: &Value, store: &Store) -> Value {
        let token = review
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or("");
        let wanted: Vec<String> =
            crate::apiserver::meta::string_list(review.pointer("/spec/audiences"));
        let sa_claims = self.verify_service_account_token(token);
        let user = self
            .authenticate(token)
            .or_else(|| crate::apiserver::bootstrap_token::authenticate(store, token));
        let audience_ok = match &sa_claims {
            Some(claims) if !wanted.is_empty() => {
                wanted.iter().any(|a| claims.audiences.contains(a))
            }
            _ => true,
        };
        let mut out = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "metadata": {"creationTimestamp": null},
            "spec": review.get("spec").cloned().unwrap_or_default(),
        });
        out["status"] = match user {
            Some(user) if audience_ok => json!({
                "authenticated": true,
                "user": {"username": user.username, "uid": user.uid, "groups": user.groups},
                "audiences": wanted,
            }),
            Some(_) => json!({"authenticated": false, "error": "token audiences do not match"}),
            None => json!({"authenticated": false, "error": "invalid bearer token"}),
        };
        out
    }
}

struct TokenClaims {
    user: UserInfo,
    audiences: Vec<String>,
}

/// What the bootstrap ClusterRole `system:basic-user`, bound to `system:authenticated`, lets
/// every authenticated user do: review itself (kubernetes
/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, `ClusterRoles`).
fn basic_user_rules() -> Vec<Value> {
    vec![
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}),
        json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
            "resources": ["selfsubjectreviews"]}),
    ]
}

const BASIC_USER_REASON: &str = "RBAC: allowed by ClusterRoleBinding \"system:basic-user\" of ClusterRole \"system:basic-user\" to Group \"system:authenticated\"";

fn is_basic_user_request(attrs: &Attributes) -> bool {
    attrs.path.is_none()
        && basic_user_rules()
            .iter()
            .any(|rule| rule_allows(rule, attrs))
}

/// The non-resource URLs the bootstrap ClusterRoles `system:discovery` and
/// `system:public-info-viewer` open to every authenticated user.
fn public_non_resource_rules() -> Vec<Value> {
    vec![json!({"verbs": ["get"], "nonResourceURLs": [
        "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
        "/readyz", "/version", "/version/"]})]
}

/// The rules `user` holds in `namespace` (cluster-wide ones included), as a
/// SelfSubjectRulesReview lists them (kubernetes `pkg/registry/authorization/util`,
/// `ResourceRulesFromPolicyRules`): `(resourceRules, nonResourceRules)`.
pub fn rules_for(store: &Store, user: &UserInfo, namespace: &str) -> (Vec<Value>, Vec<Value>) {
    if user.is_master() {
        return (
            vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
        );
    }
    let mut rules = basic_user_rules();
    let mut non_resource = public_non_resource_rules();
    let crb = GroupResource::new("rbac.authorization.k8s.io", "clusterrolebindings");
    let rb = GroupResource::new("rbac.authorization.k8s.io", "rolebindings");
    let mut bindings: Vec<(Value, Option<String>)> = store
        .list(&crb, None, None, 0, &|_| true)
        .items
        .into_iter()
        .map(|b| (b.value.clone(), None))
        .collect();
    if !namespace.is_empty() {
        bindings.extend(
            store
                .list(&rb, Some(namespace), None, 0, &|_| true)
                .items
                .into_iter()
                .map(|b| (b.value.clone(), Some(namespace.to_owned()))),
        );
    }
    for (binding, ns) in bindings {
        if bound_subject(&binding, user, ns.as_deref()).is_none() {
            continue;
        }
        let role_name = binding
            .pointer("/roleRef/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let role = match binding.pointer("/roleRef/kind").and_then(Value::as_str) {
            Some("ClusterRole") => store.get(
                &GroupResource::new("rbac.authorization.k8s.io", "clusterroles"),
                "",
                role_name,
            ),
            Some("Role") => ns.as_deref().and_then(|ns| {
                store.get(
                    &GroupResource::new("rbac.authorization.k8s.io", "roles"),
                    ns,
                    role_name,
                )
            }),
            _ => None,
        };
        let Some(role) = role else { continue };
        for rule in role
            .value
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut out = serde_json::Map::new();
            if rule.get("nonResourceURLs").is_some() {
                for key in ["verbs", "nonResourceURLs"] {
                    if let Some(v) = rule.get(key) {
                        out.insert(key.into(), v.clone());
                    }
                }
                non_resource.push(Value::Object(out));
            } else {
                for key in ["verbs", "apiGroups", "resources", "resourceNames"] {
                    if let Some(v) = rule.get(key) {
                        out.insert(key.into(), v.clone());
                    }
                }
                rules.push(Value::Object(out));
            }
        }
    }
    (rules, non_resource)
}

/// Whether `user` may do what `attrs` describe, with the reason, judged by `system:masters`
/// membership and the RBAC objects in `store`.
pub fn authorize(store: &Store, user: &UserInfo, attrs: &Attributes) -> (bool, String) {
    if user.is_master() {
        return (true, String::new());
    }
    if let Some(path) = &attrs.path
        && is_public_path(path)
    {
        return (true, "discovery is open to authenticated users".into());
    }
    if is_basic_user_request(attrs) {
        return (true, BASIC_USER_REASON.into());
    }
    if let Some(path) = &attrs.path
        && is_issuer_discovery(path)
        && user.groups.iter().any(|g| g == "system:serviceaccounts")
    {
        return (true, ISSUER_DISCOVERY_REASON.into());
    }
    let crb = GroupResource::new("rbac.authorization.k8s.io", "clusterrolebindings");
    let rb = GroupResource::new("rbac.authorization.k8s.io", "rolebindings");
    let bindings = store
        .list(&crb, None, None, 0, &|_| true)
        .items
        .into_iter()
        .map(|b| (b, None))
        .chain(if attrs.namespace.is_empty() {
            Vec::new()
        } else {
            store
                .list(&rb, Some(&attrs.namespace), None, 0, &|_| true)
                .items
                .into_iter()
                .map(|b| (b, Some(attrs.namespace.clone())))
                .collect()
        });
    for (binding, namespace) in bindings {
        let Some(subject) = bound_subject(&binding.value, user, namespace.as_deref()) else {
            continue;
        };
        let Some(role_ref) = binding.value.get("roleRef") else {
            continue;
        };
        let role_name = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
        let role = match role_ref.get("kind").and_then(Value::as_str) {
            Some("ClusterRole") => store.get(
                &GroupResource::new("rbac.authorization.k8s.io", "clusterroles"),
                "",
                role_name,
            ),
            Some("Role") => namespace.as_deref().and_then(|ns| {
                store.get(
                    &GroupResource::new("rbac.authorization.k8s.io", "roles"),
                    ns,
                    role_name,
                )
            }),
            _ => None,
        };
        let Some(role) = role else { continue };
        let rules = role
            .value
            .get("rules")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if rules.iter().any(|rule| rule_allows(rule, attrs)) {
            let binding_name = binding
                .value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let role_kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
            return (
                true,
                allowed_reason(
                    binding_name,
                    namespace.as_deref(),
                    role_kind,
                    role_name,
                    subject,
                ),
            );
        }
    }
    (false, String::new())
}

/// kube's bootstrap binding `system:service-account-issuer-discovery` opens the issuer's
/// documents to every service account (kubernetes
/// `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`, `ClusterRoleBindings`).
const ISSUER_DISCOVERY_REASON: &str = "RBAC: allowed by ClusterRoleBinding \"system:service-account-issuer-discovery\" of ClusterRole \"system:service-account-issuer-discovery\" to Group \"system:serviceaccounts\"";

fn is_issuer_discovery(path: &str) -> bool {
    matches!(
        path,
        "/.well-known/openid-configuration" | "/openid/v1/jwks"
    )
}

fn is_public_path(path: &str) -> bool {
    path == "/api"
        || path == "/apis"
        || path.starts_with("/api/")
        || path.starts_with("/apis/")
        || path == "/version"
        || path.starts_with("/healthz")
        || path.starts_with("/readyz")
        || path.starts_with("/livez")
        || path.starts_with("/openapi")
}

/// The reason RBAC gives for an allowed request (kubernetes
/// `plugin/pkg/auth/authorizer/rbac/rbac.go`: `authorizingVisitor.visit` with the
/// `clusterRoleBindingDescriber` / `roleBindingDescriber` and `describeSubject`).
fn allowed_reason(
    binding: &str,
    namespace: Option<&str>,
    role_kind: &str,
    role: &str,
    subject: &Value,
) -> String {
    let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = subject.get("name").and_then(Value::as_str).unwrap_or("");
    let described = if kind == "ServiceAccount" {
        let sa_namespace = subject
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .or(namespace)
            .unwrap_or("");
        format!("{kind} {:?}", format!("{name}/{sa_namespace}"))
    } else {
        format!("{kind} {name:?}")
    };
    match namespace {
        Some(ns) => format!(
            "RBAC: allowed by RoleBinding {:?} of {role_kind} {role:?} to {described}",
            format!("{binding}/{ns}")
        ),
        None => format!(
            "RBAC: allowed by ClusterRoleBinding {binding:?} of {role_kind} {role:?} to {described}"
        ),
    }
}

/// The subject of `binding` that names `user`, if any.
fn bound_subject<'a>(
    binding: &'a Value,
    user: &UserInfo,
    namespace: Option<&str>,
) -> Option<&'a Value> {
    let subjects = binding.get("subjects").and_then(Value::as_array);
    subjects.into_iter().flatten().find(|s| {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        match s.get("kind").and_then(Value::as_str) {
            Some("User") => name == user.username,
            Some("Group") => user.groups.iter().any(|g| g == name),
            Some("ServiceAccount") => {
                let ns = s
                    .get("namespace")
                    .and_then(Value::as_str)
                    .or(namespace)
                    .unwrap_or("");
                user.username == format!("system:serviceaccount:{ns}:{name}")
            }
            _ => false,
        }
    })
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether one RBAC PolicyRule allows the request.
pub fn rule_allows(rule: &Value, attrs: &Attributes) -> bool {
    let verbs = strings(rule.get("verbs"));
    if !verbs.iter().any(|v| *v == "*" || *v == attrs.verb) {
        return false;
    }
    if let Some(path) = &attrs.path {
        return strings(rule.get("nonResourceURLs")).iter().any(|u| {
            *u == "*"
                || *u == path
                || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        });
    }
    let groups = strings(rule.get("apiGroups"));
    if !groups.iter().any(|g| *g == "*" || *g == attrs.group) {
        return false;
    }
    let full = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let resources = strings(rule.get("resources"));
    let resource_ok = resources.iter().any(|r| {
        *r == "*"
            || *r == full
            || (attrs.subresource.is_empty() && *r == attrs.resource)
            || (r.starts_with("*/") && !attrs.subresource.is_empty() && r[2..] == attrs.subresource)
            || (r.ends_with("/*")
                && !attrs.subresource.is_empty()
                && r[..r.len() - 2] == attrs.resource)
    });
    if !resource_ok {
        return false;
    }
    let names = strings(rule.get("resourceNames"));
    names.is_empty() || (!attrs.name.is_empty() && names.contains(&attrs.name.as_str()))
}

/// Reads the attributes of a SubjectAccessReview-like spec.
pub fn review_attributes(spec: &Value) -> Attributes {
    let s = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if spec.get("nonResourceAttributes").is_some() {
        return Attributes {
            verb: s("/nonResourceAttributes/verb"),
            path: Some(s("/nonResourceAttributes/path")),
            ..Default::default()
        };
    }
    Attributes {
        verb: s("/resourceAttributes/verb"),
        group: s("/resourceAttributes/group"),
        resource: s("/resourceAttributes/resource"),
        subresource: s("/resourceAttributes/subresource"),
        namespace: s("/resourceAttributes/namespace"),
        name: s("/resourceAttributes/name"),
        path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_like_rbac() {
        let rule = json!({"apiGroups": ["kairship.io"], "resources": ["instances", "instances/proxy"],
            "resourceNames": ["a"], "verbs": ["get", "list"]});
        let cases = [
            (attrs("get", "kairship.io", "instances", "", "a"), true),
            (attrs("get", "kairship.io", "instances", "proxy", "a"), true),
            (attrs("get", "kairship.io", "instances", "", "b"), false),
            (attrs("list", "kairship.io", "instances", "", ""), false),
            (attrs("create", "kairship.io", "instances", "", "a"), false),
            (attrs("get", "", "instances", "", "a"), false),
        ];
        for (a, want) in cases {
            assert_eq!(rule_allows(&rule, &a), want, "{a:?}");
        }
        let star = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert!(rule_allows(
            &star,
            &attrs("delete", "apps", "deployments", "", "x")
        ));
        let sub = json!({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]});
        assert!(rule_allows(&sub, &attrs("get", "", "pods", "log", "p")));
        assert!(!rule_allows(&sub, &attrs("get", "", "pods", "", "p")));
    }

    #[test]
    fn service_account_tokens_verify_and_expire_checks() {
        let auth = Auth::new();
        let (token, _) = auth
            .issue_token("ns", "sa", "u1", &["api".into()], 3600, None)
            .unwrap();
        let user = auth.authenticate(&token).unwrap();
        assert_eq!(user.username, "system:serviceaccount:ns:sa");
        assert!(
            user.groups
                .contains(&"system:serviceaccounts:ns".to_string())
        );
        let mut tampered = token.clone();
        tampered.push('x');
        assert!(auth.authenticate(&tampered).is_none());
        let other = Auth::new();
        assert!(other.authenticate(&token).is_none());
        let review = auth.token_review(
            &json!({"spec": {"token": token, "audiences": ["other"]}}),
            &Store::new(10),
        );
        assert_eq!(review["status"]["authenticated"], false);
        assert!(auth.authenticate(auth.admin_token()).unwrap().is_master());
    }
}
