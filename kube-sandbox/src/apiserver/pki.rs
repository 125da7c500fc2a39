//! The cluster's certificate authority, as kube-apiserver's `--client-ca-file` and
//! `--kubelet-client-certificate` use it: it signs the serving certificates of the API server
//! and the simulated kubelet, the client certificate the API server presents to kubelets
//! (CN `kube-apiserver-kubelet-client`, O `system:masters`), and any client certificate a test
//! asks for. Served endpoints accept client certificates signed by it as an authentication
//! method (user = CN, groups = O), checking them after the handshake so that a certificate
//! signed by another CA gets 401 as it does from kube-apiserver, not a TLS failure.

use crate::apiserver::auth::UserInfo;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use std::fmt;
use std::sync::Arc;

/// The common name of the client certificate the API server presents to kubelets.
pub const KUBELET_CLIENT_COMMON_NAME: &str = "kube-apiserver-kubelet-client";
/// The organization (group) of the client certificate the API server presents to kubelets.
pub const KUBELET_CLIENT_ORGANIZATION: &str = "system:masters";

/// Why a certificate could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// Generating a key or signing a certificate failed.
    #[error("cannot generate {what}: {source}")]
    Generate {
        /// Which certificate or key.
        what: String,
        /// The cause.
        source: rcgen::Error,
    },
    /// A TLS configuration could not be built from the certificates.
    #[error("cannot build the TLS configuration for {what}: {reason}")]
    Tls {
        /// Which endpoint.
        what: String,
        /// The cause.
        reason: String,
    },
    /// A presented certificate chain is not signed by the cluster CA or cannot be read.
    #[error("client certificate rejected: {0}")]
    Rejected(String),
}

/// A certificate and its private key, both PEM, signed by a cluster CA.
#[derive(Clone)]
pub struct IssuedCertificate {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The PKCS#8 private key (PEM).
    pub key_pem: String,
    pub(crate) cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl IssuedCertificate {
    /// The certificate followed by its key, the form of `reqwest::Identity::from_pem` and of a
    /// kubeconfig's client data.
    pub fn identity_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.key_pem)
    }

    /// The certificate (DER).
    pub fn cert_der(&self) -> &CertificateDer<'static> {
        &self.cert_der
    }

    pub(crate) fn private_key(&self) -> Result<PrivateKeyDer<'static>, String> {
        PrivateKeyDer::try_from(self.key_der.clone()).map_err(str::to_string)
    }
}

impl fmt::Debug for IssuedCertificate {
    // The private key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedCertificate")
            .field("cert_pem", &self.cert_pem)
            .finish_non_exhaustive()
    }
}

/// What the client certificate of a TLS connection says about its peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerCertificate {
    /// No client certificate was presented (or the connection is not TLS).
    Absent,
    /// A certificate signed by the cluster CA: the user it names.
    Verified(UserInfo),
    /// A certificate that does not verify against the cluster CA, and why.
    Rejected(String),
}

/// One cluster's certificate authority and the certificates it signed for the cluster's own use.
pub struct ClusterPki {
    ca_pem: String,
    pub(crate) ca_der: CertificateDer<'static>,
    issuer: rcgen::Issuer<'static, KeyPair>,
    kubelet_client: IssuedCertificate,
    pub(crate) verifier: Arc<dyn ClientCertVerifier>,
}

impl fmt::Debug for ClusterPki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterPki")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

fn generate(what: &str) -> impl Fn(rcgen::Error) -> CertificateError + '_ {
    move |source| CertificateError::Generate {
        what: what.to_string(),
        source,
    }
}

/// The crypto provider of the cluster's TLS: ring.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl ClusterPki {
    /// A fresh CA (ECDSA P-256) for the named cluster, and the API server's kubelet-client
    /// certificate signed by it.
    pub fn new(cluster: &str) -> Result<ClusterPki, CertificateError> {
        let ca_key = KeyPair::generate().map_err(generate("the CA key"))?;
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(generate("the CA"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, format!("kube-sandbox-ca-{cluster}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = params.self_signed(&ca_key).map_err(generate("the CA"))?;
        let ca_der = ca_cert.der().clone();
        let mut roots = RootCertStore::empty();
        roots
            .add(ca_der.clone())
            .map_err(|e| CertificateError::Tls {
                what: "client certificate verification".into(),
                reason: e.to_string(),
            })?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| CertificateError::Tls {
                what: "client certificate verification".into(),
                reason: e.to_string(),
            })?;
        let issuer = rcgen::Issuer::new(params, ca_key);
        let kubelet_client = issue(
            &issuer,
            KUBELET_CLIENT_COMMON_NAME,
            Some(KUBELET_CLIENT_ORGANIZATION),
            &[],
        )?;
        Ok(ClusterPki {
            ca_pem: ca_cert.pem(),
            ca_der,
            issuer,
            kubelet_client,
            verifier,
        })
    }

    /// The CA certificate (PEM): what clients trust for the served API, and what a kubelet-like
    /// server (`--client-ca-file`) trusts to authenticate the API server.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate (DER).
    pub fn ca_der(&self) -> &CertificateDer<'static> {
        &self.ca_der
    }

    /// The client certificate the API server presents when it calls a node's kubelet endpoint
    /// (CN `kube-apiserver-kubelet-client`, O `system:masters`).
    pub fn kubelet_client_certificate(&self) -> &IssuedCertificate {
        &self.kubelet_client
    }

    /// A client certificate signed by this CA: the served API server authenticates it as user
    /// `common_name` in group `organization` (rcgen writes one O per subject).
    pub fn issue_client_certificate(
        &self,
        common_name: &str,
        organization: Option<&str>,
    ) -> Result<IssuedCertificate, CertificateError> {
        issue(&self.issuer, common_name, organization, &[])
    }

    /// A serving certificate signed by this CA for `hosts` (DNS names or IP addresses).
    pub fn issue_serving_certificate(
        &self,
        common_name: &str,
        hosts: &[&str],
    ) -> Result<IssuedCertificate, CertificateError> {
        issue(&self.issuer, common_name, None, hosts)
    }

    /// Signs a PEM certificate request (PKCS#10) with this CA, as kube-controller-manager's
    /// csrsigning controller does with `--cluster-signing-cert-file`: the certificate keeps the
    /// request's subject and public key, is valid from five minutes ago (upstream's backdate)
    /// for `valid_seconds`, and carries `key_usages` and `extended_key_usages`. The request's
    /// signature must verify. Returns the certificate (PEM).
    pub fn sign_request(
        &self,
        request_pem: &str,
        key_usages: Vec<KeyUsagePurpose>,
        extended_key_usages: Vec<ExtendedKeyUsagePurpose>,
        valid_seconds: i64,
    ) -> Result<String, CertificateError> {
        let request = rcgen::CertificateSigningRequestParams::from_pem(request_pem)
            .map_err(|e| CertificateError::Rejected(format!("the certificate request: {e}")))?;
        let mut params = CertificateParams::default();
        params.distinguished_name = request.params.distinguished_name.clone();
        // The requested names, as kube-controller-manager's signer copies them
        // (kubernetes `pkg/controller/certificates/authority/authority.go`, `Sign`).
        params.subject_alt_names = request.params.subject_alt_names.clone();
        let now = time::OffsetDateTime::now_utc();
        params.not_before = now - time::Duration::minutes(5);
        params.not_after = now + time::Duration::seconds(valid_seconds);
        params.key_usages = key_usages;
        params.extended_key_usages = extended_key_usages;
        params.use_authority_key_identifier_extension = true;
        let mut serial = crate::apiserver::meta::random_bytes::<16>();
        serial[0] &= 0x7f;
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
        let cert = params
            .signed_by(&request.public_key, &self.issuer)
            .map_err(generate("the signed certificate"))?;
        Ok(cert.pem())
    }

    /// The user a client certificate chain (leaf first) names, if this CA signed it.
    pub fn authenticate_certificate(
        &self,
        chain: &[CertificateDer<'_>],
    ) -> Result<UserInfo, CertificateError> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err(CertificateError::Rejected("no certificate".into()));
        };
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(|e| CertificateError::Rejected(e.to_string()))?;
        let subject = certificate_subject(leaf.as_ref()).ok_or_else(|| {
            CertificateError::Rejected("the certificate subject cannot be read".into())
        })?;
        let common_name = subject
            .common_name
            .filter(|cn| !cn.is_empty())
            .ok_or_else(|| {
                CertificateError::Rejected("the certificate has no common name".into())
            })?;
        let groups: Vec<&str> = subject.organizations.iter().map(String::as_str).collect();
        Ok(UserInfo::new(&common_name, &groups))
    }

    /// What the client certificates of a finished handshake say about the peer.
    pub fn peer_certificate(&self, chain: Option<&[CertificateDer<'_>]>) -> PeerCertificate {
        match chain {
            None | Some([]) => PeerCertificate::Absent,
            Some(chain) => match self.authenticate_certificate(chain) {
                Ok(user) => PeerCertificate::Verified(user),
                Err(e) => PeerCertificate::Rejected(e.to_string()),
            },
        }
    }
}

/// The subject of a PEM certificate request whose signature verifies (kube-apiserver's CSR
/// validation parses the request and checks its signature).
pub fn request_subject(request_pem: &str) -> Result<CertificateSubject, String> {
    let request =
        rcgen::CertificateSigningRequestParams::from_pem(request_pem).map_err(|e| e.to_string())?;
    let text = |value: &rcgen::DnValue| match value {
        rcgen::DnValue::Utf8String(s) => Some(s.clone()),
        rcgen::DnValue::PrintableString(s) => Some(s.as_str().to_owned()),
        rcgen::DnValue::Ia5String(s) => Some(s.as_str().to_owned()),
        _ => None,
    };
    let mut subject = CertificateSubject::default();
    for (kind, value) in request.params.distinguished_name.iter() {
        match kind {
            DnType::CommonName => subject.common_name = text(value),
            DnType::OrganizationName => subject.organizations.extend(text(value)),
            _ => {}
        }
    }
    Ok(subject)
}

fn issue(
    issuer: &rcgen::Issuer<'static, KeyPair>,
    common_name: &str,
    organization: Option<&str>,
    hosts: &[&str],
) -> Result<IssuedCertificate, CertificateError> {
    let what = format!("the certificate for {common_name:?}");
    let key = KeyPair::generate().map_err(generate(&what))?;
    let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
    let mut params = CertificateParams::new(names).map_err(generate(&what))?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = if hosts.is_empty() {
        vec![ExtendedKeyUsagePurpose::ClientAuth]
    } else {
        vec![ExtendedKeyUsagePurpose::ServerAuth]
    };
    params.use_authority_key_identifier_extension = true;
    let cert = params.signed_by(&key, issuer).map_err(generate(&what))?;
    Ok(IssuedCertificate {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        cert_der: cert.der().clone(),
        key_der: key.serialize_der(),
    })
}

pub use kube_kit::x509::{CertificateSubject, certificate_subject};

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn subjects_of_issued_certificates() {
        let pki = ClusterPki::new("t").unwrap();
        let cases = [
            ("alice", Some("team-a")),
            ("kube-apiserver-kubelet-client", Some("system:masters")),
            ("bob", None),
        ];
        for (cn, org) in cases {
            let cert = pki.issue_client_certificate(cn, org).unwrap();
            let subject = certificate_subject(cert.cert_der().as_ref()).unwrap();
            assert_eq!(subject.common_name.as_deref(), Some(cn));
            assert_eq!(
                subject.organizations,
                org.map(|o| vec![o.to_string()]).unwrap_or_default()
            );
        }
        assert_eq!(certificate_subject(b"not a certificate"), None);
        assert_eq!(certificate_subject(&[]), None);
    }

    #[test]
    fn only_certificates_of_this_ca_authenticate() {
        let pki = ClusterPki::new("a").unwrap();
        let other = ClusterPki::new("b").unwrap();
        let ours = pki.issue_client_certificate("carol", Some("devs")).unwrap();
        let theirs = other
            .issue_client_certificate("carol", Some("devs"))
            .unwrap();
        let user = pki
            .authenticate_certificate(&[ours.cert_der().clone()])
            .unwrap();
        assert_eq!(user.username, "carol");
        assert!(user.groups.contains(&"devs".to_string()));
        assert!(
            pki.authenticate_certificate(&[theirs.cert_der().clone()])
                .is_err()
        );
        let kubelet =
            pki.peer_certificate(Some(&[pki.kubelet_client_certificate().cert_der().clone()]));
        match kubelet {
            PeerCertificate::Verified(u) => {
                assert_eq!(u.username, KUBELET_CLIENT_COMMON_NAME);
                assert!(u.is_master());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(pki.peer_certificate(None), PeerCertificate::Absent);
        assert!(matches!(
            pki.peer_certificate(Some(&[theirs.cert_der().clone()])),
            PeerCertificate::Rejected(_)
        ));
        // A serving certificate is not a client certificate.
        let serving = pki
            .issue_serving_certificate("server", &["127.0.0.1"])
            .unwrap();
        assert!(
            pki.authenticate_certificate(&[serving.cert_der().clone()])
                .is_err()
        );
        assert!(!format!("{ours:?}").contains("PRIVATE KEY"));
    }
}
