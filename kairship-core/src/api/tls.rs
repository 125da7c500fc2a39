//! TLS for the API server: a rustls configuration from PEM files (ALPN `h2` and
//! `http/1.1`, so gRPC and REST share the port), and self-signed development certificates.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why a TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate PEM holds no usable certificate.
    #[error("certificate: {0}")]
    Certificate(String),
    /// The key PEM holds no usable private key.
    #[error("private key: {0}")]
    PrivateKey(String),
    /// rustls refused the pair.
    #[error("TLS configuration: {0}")]
    Config(String),
    /// A development certificate could not be generated.
    #[error("generating a development certificate: {0}")]
    Generate(String),
}

/// A server configuration for `cert_pem` (chain) and `key_pem`, offering HTTP/2 and HTTP/1.1.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<rustls::ServerConfig, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Certificate(e.to_string()))?;
    if certs.is_empty() {
        return Err(TlsError::Certificate(
            "no certificate in the PEM data".into(),
        ));
    }
    let key =
        PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::PrivateKey(e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A self-signed certificate and its key, PEM encoded.
#[derive(Clone)]
pub struct DevCertificate {
    /// The certificate (also the CA clients must trust).
    pub cert_pem: String,
    /// The private key.
    pub key_pem: String,
}

impl std::fmt::Debug for DevCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("DevCertificate").finish_non_exhaustive()
    }
}

/// A self-signed certificate for `names` (DNS names or IP addresses), for development only.
pub fn generate_dev_certificate(names: &[String]) -> Result<DevCertificate, TlsError> {
    let certified = rcgen::generate_simple_self_signed(names.to_vec())
        .map_err(|e| TlsError::Generate(e.to_string()))?;
    Ok(DevCertificate {
        cert_pem: certified.cert.pem(),
        key_pem: certified.signing_key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_certificates_make_a_config_with_h2() {
        let dev = generate_dev_certificate(&["localhost".into(), "127.0.0.1".into()]).unwrap();
        let config = server_config(dev.cert_pem.as_bytes(), dev.key_pem.as_bytes()).unwrap();
        assert_eq!(
            config.alpn_protocols,
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(!format!("{dev:?}").contains("PRIVATE"));
    }

    #[test]
    fn bad_pem_is_reported_per_part() {
        let dev = generate_dev_certificate(&["localhost".into()]).unwrap();
        let err = server_config(b"junk", dev.key_pem.as_bytes()).unwrap_err();
        assert!(matches!(err, TlsError::Certificate(_)), "{err}");
        let err = server_config(dev.cert_pem.as_bytes(), b"junk").unwrap_err();
        assert!(matches!(err, TlsError::PrivateKey(_)), "{err}");
        let other = generate_dev_certificate(&["localhost".into()]).unwrap();
        let err = server_config(dev.cert_pem.as_bytes(), other.key_pem.as_bytes()).unwrap_err();
        assert!(matches!(err, TlsError::Config(_)), "{err}");
    }
}
