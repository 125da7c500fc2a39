//! The subject of a client certificate that rustls has already verified against the
//! configured CA: its common name is the user name and its organizations are the groups, as
//! kube-apiserver and the kubelet read them (the DER walk is `kube_kit::x509`'s).

/// User name and groups from a certificate subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateSubject {
    /// The subject's common name (CN).
    pub common_name: String,
    /// The subject's organizations (O), in order.
    pub organizations: Vec<String>,
}

/// The subject of a DER certificate; `None` if it is not a well-formed certificate or has
/// no common name (a client without a user name).
pub fn certificate_subject(der: &[u8]) -> Option<CertificateSubject> {
    let subject = kube_kit::x509::certificate_subject(der)?;
    Some(CertificateSubject {
        common_name: subject.common_name.filter(|cn| !cn.is_empty())?,
        organizations: subject.organizations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn certificate(cn: Option<&str>, organizations: &[&str]) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["client".to_owned()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        for o in organizations {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn a_client_needs_a_common_name() {
        let cases = [
            (
                certificate(Some("kube-apiserver-kubelet-client"), &["system:masters"]),
                Some(("kube-apiserver-kubelet-client", vec!["system:masters"])),
            ),
            (certificate(Some("alice"), &[]), Some(("alice", vec![]))),
            (certificate(Some(""), &["g"]), None),
            (certificate(None, &["system:masters"]), None),
        ];
        for (der, want) in cases {
            let want = want.map(|(cn, orgs)| CertificateSubject {
                common_name: cn.to_owned(),
                organizations: orgs.into_iter().map(str::to_owned).collect(),
            });
            assert_eq!(certificate_subject(&der), want);
        }
        assert_eq!(certificate_subject(b"not a certificate"), None);
    }
}
