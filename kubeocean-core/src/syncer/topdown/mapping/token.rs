//! Service-account tokens of mapped pods: a virtual pod's projected tokens are requested
//! from the computing cluster (TokenRequest) and stored in a worker Secret that the
//! physical pod projects instead.

use std::collections::BTreeMap;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{KeyToPath, Pod, PodSpec, Secret, SecretProjection};
use kube::api::ObjectMeta;
use md5::{Digest, Md5};

use super::config::OPAQUE_TYPE;
use super::{MapError, MappingContext, namespaced_identity};
use crate::labels;

/// Annotation on token Secrets: when their tokens are due for refresh (RFC 3339).
pub const TOKEN_REFRESH_AT: &str = "kubeocean.io/token-refresh-at";
/// Characters of the pod name kept at the front of its token Secret's name.
const TOKEN_SECRET_PREFIX_LEN: usize = 24;
/// A token is refreshed once this share of its lifetime has passed...
const REFRESH_AT_PERCENT: i64 = 80;
/// ...or once it is this old, whichever comes first (the kubelet's rule).
const MAX_TOKEN_AGE: SignedDuration = SignedDuration::from_hours(24);

/// Key of the worker token Secret that holds the service-account token for the default
/// audience; tokens for other audiences use [`token_key`].
pub const SERVICE_ACCOUNT_TOKEN_KEY: &str = "token";

/// One service-account token the pod projects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenProjection {
    /// Key of the token Secret that holds it.
    pub key: String,
    /// Audience to request; `None` for the API server's default audience.
    pub audience: Option<String>,
    /// Requested lifetime, the shortest asked for this audience.
    pub expiration_seconds: Option<i64>,
}

/// The TokenRequests to make for a pod, whose tokens go into its token Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenRequestSpec {
    /// Service account of the virtual pod (`default` when unset).
    pub service_account_name: String,
    /// One entry per distinct audience, by Secret key.
    pub tokens: Vec<TokenProjection>,
}

/// Key of the token Secret holding the token for `audience` (`token` for the default one).
pub fn token_key(audience: Option<&str>) -> String {
    match audience.filter(|a| !a.is_empty()) {
        None => SERVICE_ACCOUNT_TOKEN_KEY.to_owned(),
        Some(audience) => {
            let digest = Md5::digest(audience.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("{SERVICE_ACCOUNT_TOKEN_KEY}-{hex}")
        }
    }
}

pub(super) fn token_request_spec(spec: &PodSpec) -> Option<TokenRequestSpec> {
    let mut by_key: BTreeMap<String, TokenProjection> = BTreeMap::new();
    for volume in spec.volumes.iter().flatten() {
        let sources = volume
            .projected
            .iter()
            .flat_map(|p| p.sources.iter().flatten());
        for token in sources.filter_map(|s| s.service_account_token.as_ref()) {
            let audience = token.audience.clone().filter(|a| !a.is_empty());
            let key = token_key(audience.as_deref());
            let entry = by_key.entry(key.clone()).or_insert(TokenProjection {
                key,
                audience,
                expiration_seconds: token.expiration_seconds,
            });
            entry.expiration_seconds = match (entry.expiration_seconds, token.expiration_seconds) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
    }
    if by_key.is_empty() {
        return None;
    }
    let service_account_name = spec
        .service_account_name
        .clone()
        .or_else(|| spec.service_account.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    Some(TokenRequestSpec {
        service_account_name,
        tokens: by_key.into_values().collect(),
    })
}

/// Replaces every projected service-account token by the matching key of the token Secret;
/// `None` when the pod projects a token but no token Secret is known.
pub(super) fn replace_token_projections(
    spec: &mut PodSpec,
    token_secret: Option<&str>,
) -> Option<()> {
    let sources = spec
        .volumes
        .iter_mut()
        .flatten()
        .filter_map(|v| v.projected.as_mut())
        .flat_map(|p| p.sources.iter_mut().flatten());
    for source in sources {
        let Some(token) = source.service_account_token.take() else {
            continue;
        };
        let secret = token_secret.filter(|s| !s.is_empty())?;
        source.secret = Some(SecretProjection {
            name: secret.to_owned(),
            items: Some(vec![KeyToPath {
                key: token_key(token.audience.as_deref()),
                path: token.path,
                mode: None,
            }]),
            optional: None,
        });
    }
    Some(())
}
fn md5_hex(input: &str) -> String {
    Md5::digest(input.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Name of the worker Secret holding the tokens of virtual pod `pod`:
/// `<first 24 characters of the pod name>-token-<md5 of "<namespace>/<name>/token">`, at
/// most 63 characters. The hashed input contains a `/` after the name, which no object name
/// can, so it never equals the physical name of a copied Secret.
pub fn token_secret_name(pod: &Pod) -> Result<String, MapError> {
    let (namespace, name) = namespaced_identity(&pod.metadata, "Pod")?;
    let digest = md5_hex(&format!("{namespace}/{name}/token"));
    let prefix: String = name.chars().take(TOKEN_SECRET_PREFIX_LEN).collect();
    let prefix = prefix.trim_end_matches(['-', '.']);
    Ok(if prefix.is_empty() {
        format!("token-{digest}")
    } else {
        format!("{prefix}-token-{digest}")
    })
}

/// When a token issued at `issued_at` and expiring at `expires_at` should be replaced: after
/// 80% of its lifetime (whole seconds), and at the latest 24 hours after issue.
pub fn token_refresh_at(issued_at: Timestamp, expires_at: Timestamp) -> Timestamp {
    let lifetime = expires_at.duration_since(issued_at).as_secs();
    let age = lifetime
        .checked_mul(REFRESH_AT_PERCENT)
        .map(|share| SignedDuration::from_secs(share / 100))
        .unwrap_or(MAX_TOKEN_AGE)
        .min(MAX_TOKEN_AGE)
        .max(SignedDuration::ZERO);
    issued_at.checked_add(age).unwrap_or(expires_at)
}

/// The worker Secret that holds `tokens` (Secret key -> token, see [`token_key`]) for
/// virtual pod `pod`: in the mount namespace, labelled managed-by Kubeocean, pointing back
/// at the virtual pod (so [`super::ownership`] and orphan collection work as for pods), and
/// annotated with when to refresh.
pub fn token_secret(
    pod: &Pod,
    tokens: &BTreeMap<String, String>,
    refresh_at: Timestamp,
    ctx: &MappingContext<'_>,
) -> Result<Secret, MapError> {
    let (namespace, name) = namespaced_identity(&pod.metadata, "Pod")?;
    let annotations = [
        (labels::VIRTUAL_POD_NAMESPACE, namespace.to_owned()),
        (labels::VIRTUAL_POD_NAME, name.to_owned()),
        (
            labels::VIRTUAL_POD_UID,
            pod.metadata.uid.clone().unwrap_or_default(),
        ),
        (TOKEN_REFRESH_AT, refresh_at.to_string()),
    ]
    .map(|(k, v)| (k.to_owned(), v))
    .into();
    let data = tokens
        .iter()
        .map(|(key, token)| (key.clone(), ByteString(token.as_bytes().to_vec())))
        .collect();
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(token_secret_name(pod)?),
            namespace: Some(ctx.binding.mount_namespace.clone()),
            // Upstream's labels of its token Secrets (`virtual_pod_controller.go`, the token
            // Secret it builds): its syncer collects unused ones by the second.
            labels: Some(BTreeMap::from([
                (
                    labels::MANAGED_BY.to_owned(),
                    labels::MANAGED_BY_VALUE.to_owned(),
                ),
                (labels::SERVICE_ACCOUNT_TOKEN.to_owned(), "true".to_owned()),
            ])),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        data: Some(data),
        type_: Some(OPAQUE_TYPE.to_owned()),
        ..Secret::default()
    })
}

/// Whether the tokens of an existing token Secret must be requested again at `now`: its
/// refresh time has come, or it does not say (written by something else, or damaged).
pub fn token_refresh_due(secret: &Secret, now: Timestamp) -> bool {
    secret
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TOKEN_REFRESH_AT))
        .and_then(|at| at.parse::<Timestamp>().ok())
        .is_none_or(|at| now >= at)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::settings;
    use super::super::{Ownership, ownership};
    use super::*;

    fn pod(namespace: &str, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: Some(namespace.into()),
                name: Some(name.into()),
                uid: Some("pod-uid".into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    #[test]
    fn token_keys_are_valid_secret_keys() {
        assert_eq!(token_key(None), "token");
        assert_eq!(token_key(Some("")), "token");
        let key = token_key(Some("https://vault.example.com"));
        assert_eq!(key.len(), "token-".len() + 32);
        assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        assert_ne!(key, token_key(Some("other")));
    }

    #[test]
    fn token_secret_names() {
        let long = "a".repeat(23) + "-" + &"b".repeat(40);
        // (namespace, pod name, expected prefix)
        let table = [
            ("team-a", "web-0", "web-0"),
            ("team-b", "web-0", "web-0"),
            ("team-a", long.as_str(), &"a".repeat(23)[..]),
            ("team-a", &"x".repeat(253), &"x".repeat(24)[..]),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (namespace, name, prefix) in table {
            let got = token_secret_name(&pod(namespace, name)).unwrap();
            let hash = md5_hex(&format!("{namespace}/{name}/token"));
            assert_eq!(got, format!("{prefix}-token-{hash}"), "{namespace}/{name}");
            assert!(got.len() <= 63, "{got}");
            assert!(crate::naming::is_dns1123_subdomain(&got), "{got}");
            // Never the physical name of a copied Secret of the same name.
            assert_ne!(got, crate::naming::physical_name(namespace, name));
            assert!(seen.insert(got), "distinct per namespace and name");
        }
    }

    #[test]
    fn tokens_are_refreshed_at_80_percent_or_after_a_day() {
        let t0 = Timestamp::from_second(1_800_000_000).unwrap();
        let at = |secs: i64| t0.checked_add(SignedDuration::from_secs(secs)).unwrap();
        // (lifetime in seconds, expected refresh after issue in seconds)
        let table = [(3_607, 2_885), (600, 480), (48 * 3_600, 24 * 3_600), (0, 0)];
        for (lifetime, want) in table {
            assert_eq!(
                token_refresh_at(t0, at(lifetime)),
                at(want),
                "lifetime {lifetime}s"
            );
        }
    }

    #[test]
    fn token_secret_is_owned_by_its_pod_and_knows_when_to_refresh() {
        let binding = settings();
        let ctx = MappingContext::new(&binding);
        let virtual_pod = pod("team-a", "web-0");
        let refresh_at = Timestamp::from_second(1_800_000_000).unwrap();
        let tokens = BTreeMap::from([(token_key(None), "header.payload.sig".to_owned())]);
        let secret = token_secret(&virtual_pod, &tokens, refresh_at, &ctx).unwrap();
        assert_eq!(
            secret.metadata.name,
            Some(token_secret_name(&virtual_pod).unwrap())
        );
        assert_eq!(
            secret.metadata.namespace.as_deref(),
            Some("kubeocean-worker")
        );
        assert_eq!(secret.type_.as_deref(), Some(OPAQUE_TYPE));
        assert_eq!(
            secret.data.as_ref().unwrap()["token"],
            ByteString(b"header.payload.sig".to_vec())
        );
        assert_eq!(
            ownership(&secret.metadata, &virtual_pod.metadata),
            Ownership::Ours
        );
        let mut other = virtual_pod.clone();
        other.metadata.uid = Some("another-uid".into());
        assert!(matches!(
            ownership(&secret.metadata, &other.metadata),
            Ownership::Foreign(_)
        ));

        let before = Timestamp::from_second(1_799_999_999).unwrap();
        assert!(!token_refresh_due(&secret, before));
        assert!(token_refresh_due(&secret, refresh_at));
        let mut unreadable = secret.clone();
        unreadable
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(TOKEN_REFRESH_AT.into(), "soon".into());
        assert!(token_refresh_due(&unreadable, before));
    }
}
