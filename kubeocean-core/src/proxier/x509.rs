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

/// The validity (`notBefore`, `notAfter`) of the first certificate of a PEM chain; `None` if
/// it cannot be read. Only the DER elements on the way to `validity` are decoded (RFC 5280
/// section 4.1: `TBSCertificate` = version, serialNumber, signature, issuer, validity, ...).
pub fn certificate_validity(pem: &str) -> Option<(jiff::Timestamp, jiff::Timestamp)> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let der = CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()?
        .ok()?;
    let (tag, certificate, _) = read_tlv(der.as_ref())?;
    if tag != 0x30 {
        return None;
    }
    let (tag, mut tbs, _) = read_tlv(certificate)?;
    if tag != 0x30 {
        return None;
    }
    if read_tlv(tbs)?.0 == 0xA0 {
        tbs = read_tlv(tbs)?.2;
    }
    // serialNumber, signature, issuer.
    for _ in 0..3 {
        tbs = read_tlv(tbs)?.2;
    }
    let (tag, validity, _) = read_tlv(tbs)?;
    if tag != 0x30 {
        return None;
    }
    let (tag, not_before, rest) = read_tlv(validity)?;
    let not_before = asn1_time(tag, not_before)?;
    let (tag, not_after, _) = read_tlv(rest)?;
    Some((not_before, asn1_time(tag, not_after)?))
}

/// A `UTCTime` (`YYMMDDHHMMSSZ`, years 1950-2049) or `GeneralizedTime` (`YYYYMMDDHHMMSSZ`).
fn asn1_time(tag: u8, value: &[u8]) -> Option<jiff::Timestamp> {
    let text = std::str::from_utf8(value).ok()?.strip_suffix('Z')?;
    let full = match (tag, text.len()) {
        (0x17, 12) => {
            let year: u32 = text.get(..2)?.parse().ok()?;
            let century = if year >= 50 { "19" } else { "20" };
            format!("{century}{text}")
        }
        (0x18, 14) => text.to_owned(),
        _ => return None,
    };
    if !full.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let iso = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &full[..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    );
    iso.parse().ok()
}

/// One DER element: tag, contents and what follows.
fn read_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (length, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let length = rest[..count]
            .iter()
            .fold(0usize, |acc, byte| acc << 8 | usize::from(*byte));
        (length, &rest[count..])
    };
    if rest.len() < length {
        return None;
    }
    Some((tag, &rest[..length], &rest[length..]))
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
    #[test]
    fn validity_is_read_from_the_certificate() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["n".to_owned()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2024, 1, 2);
        params.not_after = rcgen::date_time_ymd(2051, 3, 4);
        let pem = params.self_signed(&key).unwrap().pem();
        let (from, to) = certificate_validity(&pem).unwrap();
        assert_eq!(from.to_string(), "2024-01-02T00:00:00Z");
        assert_eq!(to.to_string(), "2051-03-04T00:00:00Z");
        assert_eq!(certificate_validity("not PEM"), None);
        assert_eq!(
            asn1_time(0x17, b"991231235959Z")
                .map(|t| t.to_string())
                .as_deref(),
            Some("1999-12-31T23:59:59Z")
        );
        assert_eq!(asn1_time(0x17, b"99123123595Z"), None);
    }
}
