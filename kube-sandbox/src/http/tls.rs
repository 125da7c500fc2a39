//! TLS for the served endpoints: an acceptor with the cluster CA's serving certificate that
//! asks clients for a certificate without requiring one, so that a certificate signed by
//! another CA gets 401 from the API (as from kube-apiserver) rather than a TLS failure.

use crate::apiserver::pki::{CertificateError, ClusterPki, IssuedCertificate, provider};
use rustls::DigitallySignedStruct;
use rustls::DistinguishedName;
use rustls::SignatureScheme;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use std::sync::Arc;

impl ClusterPki {
    /// A TLS acceptor serving `serving` (HTTP/2 and HTTP/1.1) that asks clients for a
    /// certificate without requiring one; check what was presented with
    /// [`ClusterPki::peer_certificate`] after the handshake.
    pub fn tls_acceptor(
        &self,
        serving: &IssuedCertificate,
        alpn_h2: bool,
    ) -> Result<tokio_rustls::TlsAcceptor, CertificateError> {
        let fail = |reason: String| CertificateError::Tls {
            what: "a server".into(),
            reason,
        };
        let key = serving.private_key().map_err(fail)?;
        let chain = vec![serving.cert_der.clone(), self.ca_der.clone()];
        let verifier = Arc::new(CheckedLater {
            inner: self.verifier.clone(),
        });
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(e.to_string()))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .map_err(|e| fail(e.to_string()))?;
        config.alpn_protocols = if alpn_h2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
    }
}

/// Accepts any client certificate during the handshake (still checking that the client holds
/// its key) so that the request can be answered 401 when it is not signed by the CA.
#[derive(Debug)]
struct CheckedLater {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for CheckedLater {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn serving_certificates_make_an_acceptor() {
        let pki = ClusterPki::new("a").unwrap();
        let serving = pki
            .issue_serving_certificate("server", &["127.0.0.1"])
            .unwrap();
        assert!(pki.tls_acceptor(&serving, true).is_ok());
        assert!(pki.tls_acceptor(&serving, false).is_ok());
    }
}
