//! The proxier's TLS: its serving certificate, and client certificates verified against the
//! computing cluster's CA (optional, so that bearer-token clients can connect too).

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;

use super::ProxierError;
use super::x509::{CertificateSubject, certificate_subject};

/// A self-signed serving certificate and its private key (both PEM) for `hosts` (DNS names
/// or IP addresses; `localhost` and `127.0.0.1` when empty). For development and tests:
/// kube-apiserver does not verify kubelet serving certificates unless told to.
pub fn self_signed_serving_cert(hosts: &[String]) -> Result<(String, String), ProxierError> {
    use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
    let fail = |e: rcgen::Error| ProxierError::Certificate(e.to_string());
    let hosts = if hosts.is_empty() {
        vec!["localhost".to_owned(), "127.0.0.1".to_owned()]
    } else {
        hosts.to_vec()
    };
    let key = KeyPair::generate().map_err(fail)?;
    let mut params = CertificateParams::new(hosts).map_err(fail)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kubeocean-proxier");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.self_signed(&key).map_err(fail)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The rustls configuration: `cert_pem` (leaf first, then intermediates) and `key_pem`
/// served; with `client_ca_pem`, client certificates are requested and must chain to it, but
/// clients without one may still connect and authenticate with a bearer token.
pub fn server_config(
    cert_pem: &str,
    key_pem: &str,
    client_ca_pem: Option<&str>,
) -> Result<rustls::ServerConfig, ProxierError> {
    let serving = |reason: String| ProxierError::ServingCertificate(reason);
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| serving(format!("certificate is not valid PEM: {e}")))?;
    if chain.is_empty() {
        return Err(serving("no certificate in the PEM data".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| serving(format!("private key is not valid PEM: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| serving(e.to_string()))?;
    let builder = match client_ca_pem {
        Some(ca_pem) => {
            let roots = client_roots(ca_pem)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| ProxierError::ClientCa(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        serving(format!(
            "certificate and key do not make a usable pair: {e}"
        ))
    })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

fn client_roots(ca_pem: &str) -> Result<RootCertStore, ProxierError> {
    let certs = CertificateDer::pem_slice_iter(ca_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ProxierError::ClientCa(format!("not valid PEM: {e}")))?;
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(ProxierError::ClientCa(
            "no usable CA certificate in the PEM data".into(),
        ));
    }
    Ok(roots)
}

/// Who a verified client certificate chain names: `None` without one, `Some(None)` when the
/// leaf's subject cannot be read.
pub fn peer_subject(
    certificates: Option<&[CertificateDer<'_>]>,
) -> Option<Option<CertificateSubject>> {
    let leaf = certificates?.first()?;
    Some(certificate_subject(leaf.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_build_from_pem() {
        let (cert, key) = self_signed_serving_cert(&[]).unwrap();
        let (other_cert, other_key) =
            self_signed_serving_cert(&["proxier.example".to_owned(), "10.0.0.1".to_owned()])
                .unwrap();
        assert!(cert.contains("BEGIN CERTIFICATE"));
        assert!(key.contains("PRIVATE KEY"));
        assert!(server_config(&cert, &key, None).is_ok());
        assert!(server_config(&cert, &key, Some(&other_cert)).is_ok());
        let failures = [
            (server_config("junk", &key, None), "serving"),
            (server_config(&cert, "junk", None), "serving"),
            (server_config(&cert, &other_key, None), "serving"),
            (server_config(&cert, &key, Some("junk")), "client CA"),
            (server_config(&cert, &key, Some(&other_key)), "client CA"),
        ];
        for (result, what) in failures {
            let err = result.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(what), "{what}: {err}");
        }
    }

    #[test]
    fn peer_subjects() {
        assert_eq!(peer_subject(None), None);
        assert_eq!(peer_subject(Some(&[])), None);
        let junk = [CertificateDer::from(vec![1u8, 2, 3])];
        assert_eq!(peer_subject(Some(&junk)), Some(None));
    }
}
