//! The `--oidc-*` flags of `kairship apiserver`: kube-apiserver's names for the issuer and
//! the claim mapping, plus what the console's sign-in needs (client secret, scopes, the
//! callback URL).

use std::path::PathBuf;
use std::sync::Arc;

use kairship_core::auth::oidc::OidcClaims;
use kairship_core::auth::{OidcIssuer, OidcIssuerConfig};
use kairship_core::console::oidc::OidcSignIn;

/// OpenID Connect: ID tokens of one issuer accepted as bearer tokens, and console sign-in
/// through it.
#[derive(clap::Args, Debug, Default)]
pub struct OidcArgs {
    /// The issuer whose ID tokens are accepted (https; http only on a loopback address).
    #[arg(long, env = "KAIRSHIP_OIDC_ISSUER_URL", requires = "oidc_client_id")]
    oidc_issuer_url: Option<String>,

    /// The client id every accepted ID token must name in `aud`; also the console's client.
    #[arg(long, env = "KAIRSHIP_OIDC_CLIENT_ID", requires = "oidc_issuer_url")]
    oidc_client_id: Option<String>,

    /// The claim holding the user name.
    #[arg(long, env = "KAIRSHIP_OIDC_USERNAME_CLAIM", default_value = "sub")]
    oidc_username_claim: String,

    /// Prefix of user names; default `<issuer>#` unless the claim is `email`; `-` for none.
    #[arg(long, env = "KAIRSHIP_OIDC_USERNAME_PREFIX")]
    oidc_username_prefix: Option<String>,

    /// The claim holding the user's groups (a string or a list of strings).
    #[arg(long, env = "KAIRSHIP_OIDC_GROUPS_CLAIM")]
    oidc_groups_claim: Option<String>,

    /// Prefix of group names.
    #[arg(long, env = "KAIRSHIP_OIDC_GROUPS_PREFIX")]
    oidc_groups_prefix: Option<String>,

    /// PEM CA bundle of the issuer's certificate; default: the system roots.
    #[arg(long, env = "KAIRSHIP_OIDC_CA_FILE")]
    oidc_ca_file: Option<PathBuf>,

    /// A file holding the console client's secret, for issuers that require one.
    #[arg(long, env = "KAIRSHIP_OIDC_CLIENT_SECRET_FILE")]
    oidc_client_secret_file: Option<PathBuf>,

    /// Scopes the console asks for besides `openid` (comma-separated), e.g. `email,groups`.
    #[arg(long, env = "KAIRSHIP_OIDC_EXTRA_SCOPES", value_delimiter = ',')]
    oidc_extra_scopes: Vec<String>,

    /// The console's callback URL as registered at the issuer; default:
    /// `<scheme>://<host the browser used>/ui/oidc/callback`.
    #[arg(long, env = "KAIRSHIP_OIDC_REDIRECT_URL")]
    oidc_redirect_url: Option<String>,
}

impl OidcArgs {
    /// The console sign-in and the issuer, or `None` when no issuer is configured; a message
    /// naming the flag when a value cannot work.
    pub fn prepare(&self) -> Result<Option<OidcSignIn>, String> {
        let (Some(issuer), Some(client_id)) = (&self.oidc_issuer_url, &self.oidc_client_id) else {
            return Ok(None);
        };
        let read = |flag: &str, path: &PathBuf| {
            std::fs::read_to_string(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
        };
        let ca_pem = match &self.oidc_ca_file {
            Some(path) => Some(read("--oidc-ca-file", path)?),
            None => None,
        };
        let client_secret = match &self.oidc_client_secret_file {
            Some(path) => Some(read("--oidc-client-secret-file", path)?.trim().to_owned()),
            None => None,
        };
        let issuer = OidcIssuer::new(OidcIssuerConfig {
            claims: OidcClaims {
                issuer: issuer.clone(),
                client_id: client_id.clone(),
                username_claim: self.oidc_username_claim.clone(),
                username_prefix: self.oidc_username_prefix.clone(),
                groups_claim: self.oidc_groups_claim.clone(),
                groups_prefix: self.oidc_groups_prefix.clone(),
            },
            client_secret,
            extra_scopes: self
                .oidc_extra_scopes
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect(),
            ca_pem,
        })
        .map_err(|e| format!("--oidc-issuer-url: {e}"))?;
        Ok(Some(OidcSignIn {
            issuer: Arc::new(issuer),
            redirect_url: self.oidc_redirect_url.clone(),
        }))
    }
}
