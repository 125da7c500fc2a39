//! How a member is reached through Karmada's cluster proxy: its endpoint, CA bundle and
//! impersonator token from the Cluster and the Secrets it names, and the impersonation
//! headers naming the caller; shared by plain requests and connection upgrades.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderName, HeaderValue};
use kube_sandbox::ApiError;
use serde_json::Value;

/// Key of the CA bundle in a Cluster's `secretRef` Secret.
pub const CA_BUNDLE_KEY: &str = "caBundle";
/// Key of the token in a Cluster's Secrets.
pub const TOKEN_KEY: &str = "token";

/// Where and how a request for a member goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// `spec.apiEndpoint`.
    pub endpoint: String,
    /// The CA bundle (PEM) of the `secretRef` Secret, if the Cluster names one.
    pub ca_pem: Option<String>,
    /// The impersonator's token.
    pub token: String,
}

fn secret_value(secret: &Value, key: &str) -> Option<String> {
    let encoded = secret.pointer(&format!("/data/{key}"))?.as_str()?;
    let bytes = STANDARD.decode(encoded).ok()?;
    String::from_utf8(bytes).ok().filter(|v| !v.is_empty())
}

/// How to reach the member `name`, from its Cluster object and the Secrets it names, as
/// Karmada reads them (`get_secret(namespace, name)` reads one Secret).
pub fn connection(
    name: &str,
    cluster: &Value,
    get_secret: impl Fn(&str, &str) -> Option<Value>,
) -> Result<Connection, ApiError> {
    let spec = &cluster["spec"];
    let endpoint = spec["apiEndpoint"].as_str().unwrap_or_default();
    if endpoint.is_empty() {
        return Err(ApiError::internal(format!(
            "API endpoint of cluster {name} should not be empty"
        )));
    }
    let read = |reference: &Value| -> Result<Value, ApiError> {
        let ns = reference["namespace"].as_str().unwrap_or_default();
        let secret = reference["name"].as_str().unwrap_or_default();
        get_secret(ns, secret).ok_or_else(|| ApiError::not_found("", "secrets", secret))
    };
    let ca_pem = match spec.get("secretRef").filter(|r| r.is_object()) {
        Some(reference) => {
            let secret = read(reference)?;
            Some(secret_value(&secret, CA_BUNDLE_KEY).ok_or_else(|| {
                ApiError::internal(format!(
                    "failed to get CA bundle for cluster {name}: the CA bundle of cluster {name} is empty"
                ))
            })?)
        }
        None => None,
    };
    let Some(reference) = spec.get("impersonatorSecretRef").filter(|r| r.is_object()) else {
        return Err(ApiError::internal(format!(
            "the impersonatorSecretRef of cluster {name} is nil"
        )));
    };
    let token = secret_value(&read(reference)?, TOKEN_KEY).ok_or_else(|| {
        ApiError::internal(format!(
            "failed to get impersonateToken for cluster {name}: the impersonate token of cluster {name} is empty"
        ))
    })?;
    Ok(Connection {
        endpoint: endpoint.to_owned(),
        ca_pem,
        token,
    })
}

/// The impersonation headers naming `user` and its groups (`system:authenticated` and
/// `system:unauthenticated` are left out: the member adds them itself).
pub fn impersonation(username: &str, groups: &[String]) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    if let Ok(value) = HeaderValue::from_str(username) {
        out.push((HeaderName::from_static("impersonate-user"), value));
    }
    for group in groups {
        if group == "system:authenticated" || group == "system:unauthenticated" {
            continue;
        }
        if let Ok(value) = HeaderValue::from_str(group) {
            out.push((HeaderName::from_static("impersonate-group"), value));
        }
    }
    out
}
