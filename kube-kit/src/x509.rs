//! The subject of a client certificate that rustls has already verified against a CA: its
//! common name is the user name and its organizations are the groups, as kube-apiserver and
//! the kubelet read them. Only the few DER structures on the way to the subject are decoded.

/// User name and groups from a certificate subject.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CertificateSubject {
    /// The subject's common name (CN), if it has one.
    pub common_name: Option<String>,
    /// The subject's organizations (O), in order.
    pub organizations: Vec<String>,
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;
const VERSION: u8 = 0xA0;
const OID_COMMON_NAME: [u8; 3] = [0x55, 0x04, 0x03];
const OID_ORGANIZATION: [u8; 3] = [0x55, 0x04, 0x0A];

/// The subject of a DER certificate; `None` if it is not a well-formed certificate or a name
/// is in a string type certificates do not use for names.
pub fn certificate_subject(der: &[u8]) -> Option<CertificateSubject> {
    let (tag, certificate, _) = read_tlv(der)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, mut tbs, _) = read_tlv(certificate)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, _, rest) = read_tlv(tbs)?;
    if tag == VERSION {
        tbs = rest;
    }
    // serialNumber, signature, issuer, validity, then subject.
    for _ in 0..4 {
        tbs = read_tlv(tbs)?.2;
    }
    let (tag, names, _) = read_tlv(tbs)?;
    if tag != SEQUENCE {
        return None;
    }
    subject_of_name(names)
}

/// User name and groups from the contents of an X.501 `Name`.
fn subject_of_name(mut names: &[u8]) -> Option<CertificateSubject> {
    let mut common_name = None;
    let mut organizations = Vec::new();
    while !names.is_empty() {
        let (tag, mut set, rest) = read_tlv(names)?;
        names = rest;
        if tag != SET {
            return None;
        }
        while !set.is_empty() {
            let (tag, attribute, rest) = read_tlv(set)?;
            set = rest;
            if tag != SEQUENCE {
                return None;
            }
            let (tag, oid, value) = read_tlv(attribute)?;
            if tag != OID {
                return None;
            }
            let (tag, value, _) = read_tlv(value)?;
            if oid == OID_COMMON_NAME {
                common_name = Some(decode_string(tag, value)?);
            } else if oid == OID_ORGANIZATION {
                organizations.push(decode_string(tag, value)?);
            }
        }
    }
    Some(CertificateSubject {
        common_name,
        organizations,
    })
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

fn decode_string(tag: u8, value: &[u8]) -> Option<String> {
    match tag {
        // UTF8String, PrintableString, IA5String, TeletexString (read as UTF-8).
        0x0C | 0x13 | 0x16 | 0x14 => String::from_utf8(value.to_vec()).ok(),
        // BMPString: UTF-16BE.
        0x1E if value.len().is_multiple_of(2) => {
            let units: Vec<u16> = value
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
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
    fn subjects() {
        let long = "x".repeat(300);
        let cases = [
            (
                certificate(Some("kube-apiserver-kubelet-client"), &["system:masters"]),
                Some(("kube-apiserver-kubelet-client", vec!["system:masters"])),
            ),
            (certificate(Some("alice"), &[]), Some(("alice", vec![]))),
            (
                certificate(Some(&long), &["a"]),
                Some((long.as_str(), vec!["a"])),
            ),
            (
                certificate(None, &["system:masters"]),
                Some(("", vec!["system:masters"])),
            ),
        ];
        for (der, want) in cases {
            let want = want.map(|(cn, orgs)| CertificateSubject {
                common_name: (!cn.is_empty()).then(|| cn.to_owned()),
                organizations: orgs.into_iter().map(str::to_owned).collect(),
            });
            assert_eq!(certificate_subject(&der), want);
        }
    }

    #[test]
    fn every_organization_is_a_group() {
        let rdn = |oid: u8, value: u8| {
            [
                0x31, 0x0A, 0x30, 0x08, 0x06, 0x03, 0x55, 0x04, oid, 0x0C, 0x01, value,
            ]
        };
        let name: Vec<u8> = [
            rdn(0x0A, b'a'),
            rdn(0x03, b'u'),
            rdn(0x0A, b'b'),
            rdn(0x07, b'x'),
        ]
        .concat();
        assert_eq!(
            subject_of_name(&name),
            Some(CertificateSubject {
                common_name: Some("u".into()),
                organizations: vec!["a".into(), "b".into()],
            })
        );
        assert_eq!(
            subject_of_name(&rdn(0x0A, b'a')),
            Some(CertificateSubject {
                common_name: None,
                organizations: vec!["a".into()],
            })
        );
        assert_eq!(subject_of_name(&[0x30, 0x00]), None);
    }

    #[test]
    fn malformed_input_is_rejected() {
        let der = certificate(Some("alice"), &["g"]);
        for bad in [
            vec![],
            vec![0x30],
            vec![0x30, 0x85, 1, 2, 3, 4, 5],
            vec![0x02, 0x01, 0x00],
            der[..der.len() / 2].to_vec(),
            der[1..].to_vec(),
        ] {
            assert_eq!(certificate_subject(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn strings_decode() {
        assert_eq!(decode_string(0x0C, "ü".as_bytes()).as_deref(), Some("ü"));
        assert_eq!(
            decode_string(0x1E, &[0, b'h', 0, b'i']).as_deref(),
            Some("hi")
        );
        assert_eq!(decode_string(0x1E, &[0]), None);
        assert_eq!(decode_string(0x04, b"octets"), None);
    }

    /// Input, and the tag, content length and rest length read from it.
    type ElementCase<'a> = (&'a [u8], Option<(u8, usize, usize)>);

    #[test]
    fn der_elements_read_short_and_long_lengths() {
        let long: Vec<u8> = [vec![0x04, 0x81, 0x80], vec![7u8; 0x80], vec![0x05, 0x00]].concat();
        let cases: [ElementCase; 6] = [
            (&[0x02, 0x01, 0x05], Some((0x02, 1, 0))),
            (&[0x30, 0x00, 0x01], Some((0x30, 0, 1))),
            (&long, Some((0x04, 0x80, 2))),
            (&[0x02, 0x05, 0x01], None),
            (&[0x02, 0x85, 1, 1, 1, 1, 1], None),
            (&[0x02], None),
        ];
        for (input, want) in cases {
            let got = read_tlv(input).map(|(t, c, r)| (t, c.len(), r.len()));
            assert_eq!(got, want, "{input:?}");
        }
    }
}
