//! Kubeconfigs that reach an instance through Kairship's native proxy.

use base64::Engine as _;
use serde_json::json;

use crate::api::API_PREFIX;
use crate::api::error::ApiError;

/// The proxy URL of `instance` under the API server reachable at `server`
/// (`https://host[:port][/prefix]`).
pub fn proxy_url(server: &str, instance: &str) -> Result<String, ApiError> {
    let server = server.trim().trim_end_matches('/');
    let Some((scheme, rest)) = server.split_once("://") else {
        return Err(ApiError::invalid_field(
            "server",
            format!("{server:?} is not an http(s) URL"),
        ));
    };
    if !matches!(scheme, "http" | "https") || rest.is_empty() || rest.contains(['?', '#', ' ']) {
        return Err(ApiError::invalid_field(
            "server",
            format!("{server:?} is not an http(s) URL"),
        ));
    }
    Ok(format!("{server}{API_PREFIX}/instances/{instance}/proxy"))
}

/// What goes into a kubeconfig.
#[derive(Clone, Copy)]
pub struct KubeconfigParts<'a> {
    /// Instance name (cluster, context and user names derive from it).
    pub instance: &'a str,
    /// The proxy URL.
    pub server: &'a str,
    /// The bearer token.
    pub token: &'a str,
    /// CA certificate (PEM) clients must trust, when the server's is not publicly trusted.
    pub ca_pem: Option<&'a str>,
    /// Default namespace of the context.
    pub namespace: &'a str,
}

impl std::fmt::Debug for KubeconfigParts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeconfigParts")
            .field("instance", &self.instance)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Renders the kubeconfig YAML.
pub fn render(parts: &KubeconfigParts<'_>) -> Result<String, ApiError> {
    let name = format!("kairship-{}", parts.instance);
    let mut cluster = json!({"server": parts.server});
    if let Some(ca) = parts.ca_pem {
        cluster["certificate-authority-data"] =
            json!(base64::engine::general_purpose::STANDARD.encode(ca));
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": parts.token}}],
        "contexts": [{"name": name, "context": {
            "cluster": name, "user": name, "namespace": parts.namespace,
        }}],
        "current-context": name,
    });
    serde_saphyr::to_string(&config)
        .map_err(|e| ApiError::internal(format!("cannot render the kubeconfig of {name}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_url_table() {
        for (server, want) in [
            (
                "https://kairship.example.com",
                Some("https://kairship.example.com/apis/kairship.io/v1alpha1/instances/i1/proxy"),
            ),
            (
                "http://127.0.0.1:8443/",
                Some("http://127.0.0.1:8443/apis/kairship.io/v1alpha1/instances/i1/proxy"),
            ),
            (
                "https://gw.example.com/kairship",
                Some(
                    "https://gw.example.com/kairship/apis/kairship.io/v1alpha1/instances/i1/proxy",
                ),
            ),
            ("kairship.example.com", None),
            ("ftp://x", None),
            ("https://", None),
            ("https://x?y=1", None),
        ] {
            let got = proxy_url(server, "i1");
            assert_eq!(got.as_deref().ok(), want, "{server}");
            if let Err(err) = got {
                assert!(err.message.starts_with("server: "), "{}", err.message);
            }
        }
    }

    #[test]
    fn rendered_kubeconfig_is_readable_by_kube() {
        let token = "abc.def-\"quoted\": token";
        for ca in [
            None,
            Some("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
        ] {
            let yaml = render(&KubeconfigParts {
                instance: "i1",
                server: "https://k.example.com/apis/kairship.io/v1alpha1/instances/i1/proxy",
                token,
                ca_pem: ca,
                namespace: "default",
            })
            .unwrap();
            let config = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
            assert_eq!(config.current_context.as_deref(), Some("kairship-i1"));
            let cluster = config.clusters[0].cluster.as_ref().unwrap();
            assert_eq!(
                cluster.server.as_deref(),
                Some("https://k.example.com/apis/kairship.io/v1alpha1/instances/i1/proxy")
            );
            assert_eq!(cluster.certificate_authority_data.is_some(), ca.is_some());
            assert!(
                config.auth_infos[0]
                    .auth_info
                    .as_ref()
                    .unwrap()
                    .token
                    .is_some()
            );
            let raw: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
            assert_eq!(raw["users"][0]["user"]["token"], token);
            let context = config.contexts[0].context.as_ref().unwrap();
            assert_eq!(context.namespace.as_deref(), Some("default"));
        }
    }
}
