//! Names of virtual nodes and of the physical copies of virtual objects.

use md5::{Digest, Md5};

/// Prefix of every virtual node name.
pub const VIRTUAL_NODE_PREFIX: &str = "vnode-";
/// Kubernetes' limit for a DNS label (and the length of hashed virtual node names).
pub const DNS_LABEL_MAX_LEN: usize = 63;
/// Kubernetes' limit for a DNS subdomain.
pub const DNS_SUBDOMAIN_MAX_LEN: usize = 253;
/// Characters of the original name kept in front of a hash.
pub const HASHED_PREFIX_LEN: usize = 30;

/// Name of the virtual node for physical node `node_name` of worker `cluster_id`:
/// `vnode-<clusterID>-<node>`, or when that has 64 characters or more, its first 30
/// characters, `-` and the hex MD5 of the full name (63 characters).
pub fn virtual_node_name(cluster_id: &str, node_name: &str) -> String {
    let name = format!("{VIRTUAL_NODE_PREFIX}{cluster_id}-{node_name}");
    if name.len() <= DNS_LABEL_MAX_LEN {
        return name;
    }
    hashed_name(&name, &name)
}

/// Name in the worker cluster of the virtual object `virtual_namespace/virtual_name`
/// (pass an empty namespace for cluster-scoped objects such as PersistentVolumes): the
/// first 30 characters of the name, `-` and the hex MD5 of `<namespace>/<name>`.
pub fn physical_name(virtual_namespace: &str, virtual_name: &str) -> String {
    hashed_name(virtual_name, &format!("{virtual_namespace}/{virtual_name}"))
}

/// `<first 30 characters of name>-<md5(hashed)>`. Upstream Kubeocean builds the same
/// string; where that would not be a valid DNS-1123 subdomain (the prefix ends in `.` or
/// `-` right before a dot), trailing `-` and `.` are trimmed from the prefix instead.
fn hashed_name(name: &str, hashed: &str) -> String {
    let digest = md5_hex(hashed);
    let prefix = char_prefix(name, HASHED_PREFIX_LEN);
    let candidate = format!("{prefix}-{digest}");
    if is_dns1123_subdomain(&candidate) {
        return candidate;
    }
    let trimmed = prefix.trim_end_matches(['-', '.']);
    if trimmed.is_empty() {
        digest
    } else {
        format!("{trimmed}-{digest}")
    }
}

/// At most `max` characters from the start of `s`, cut on a character boundary.
fn char_prefix(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((end, _)) => &s[..end],
        None => s,
    }
}

fn md5_hex(input: &str) -> String {
    let digest = Md5::digest(input.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `s` is a DNS-1123 subdomain: at most 253 characters, dot-separated labels of
/// lowercase alphanumerics and `-` that start and end with an alphanumeric.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= DNS_SUBDOMAIN_MAX_LEN && s.split('.').all(is_dns1123_label_chars)
}

/// Whether `s` is a DNS-1123 label: at most 63 characters of lowercase alphanumerics and
/// `-`, starting and ending with an alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= DNS_LABEL_MAX_LEN && is_dns1123_label_chars(s)
}

fn is_dns1123_label_chars(s: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && bytes.iter().all(|b| alnum(b) || *b == b'-')
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_the_operator_docs() {
        // docs/kubeocean/bind-worker.md shows these.
        assert_eq!(
            physical_name("default", "web"),
            "web-f067a42af6a398f89214fae019fbf7d0"
        );
        assert_eq!(virtual_node_name("w1", "n1"), "vnode-w1-n1");
    }

    #[test]
    fn virtual_node_names() {
        let long_node = "ip-172-31-45-201.ap-southeast-1.compute.internal.example";
        let long_full = format!("vnode-prod-{long_node}");
        let n53 = "n".repeat(53);
        let n54 = "n".repeat(54);
        // (cluster id, node, expected)
        let table: Vec<(&str, &str, String)> = vec![
            ("c1", "node-a", "vnode-c1-node-a".into()),
            ("prod", "10.0.0.1", "vnode-prod-10.0.0.1".into()),
            // 63 characters: still the plain name.
            ("abc", &n53, format!("vnode-abc-{n53}")),
            // 64 characters: hashed.
            (
                "abc",
                &n54,
                format!(
                    "vnode-abc-{}-{}",
                    "n".repeat(20),
                    md5_hex(&format!("vnode-abc-{n54}"))
                ),
            ),
            (
                "prod",
                long_node,
                format!("{}-{}", &long_full[..30], md5_hex(&long_full)),
            ),
        ];
        for (cluster, node, want) in table {
            let got = virtual_node_name(cluster, node);
            assert_eq!(got, want, "virtual node name of {cluster}/{node}");
            assert!(got.len() <= 63, "{got} is longer than 63 characters");
            assert!(
                is_dns1123_subdomain(&got),
                "{got} is not a DNS-1123 subdomain"
            );
        }
    }

    #[test]
    fn hashed_virtual_node_names_are_63_characters() {
        for len in [54, 60, 100, 200] {
            let got = virtual_node_name("abc", &"x".repeat(len));
            assert_eq!(got.len(), 63, "node name of {len} characters");
        }
    }

    #[test]
    fn md5_is_the_standard_digest() {
        // RFC 1321 test vectors.
        assert_eq!(md5_hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
    }

    #[test]
    fn physical_names() {
        // (namespace, name, expected prefix before the hash, hashed input)
        let table = [
            ("default", "web", "web", "default/web"),
            ("team-a", "config", "config", "team-a/config"),
            ("", "pv-0001", "pv-0001", "/pv-0001"),
            (
                "default",
                "a-very-long-configmap-name-that-goes-on",
                "a-very-long-configmap-name-tha",
                "default/a-very-long-configmap-name-that-goes-on",
            ),
            // Upstream's `--` is valid, so it is kept.
            (
                "default",
                "abcdefghijklmnopqrstuvwxyz012-rest",
                "abcdefghijklmnopqrstuvwxyz012-",
                "default/abcdefghijklmnopqrstuvwxyz012-rest",
            ),
            // A prefix ending in `.` would give `.-`, invalid: trimmed (ours).
            (
                "default",
                "abcdefghijklmnopqrstuvwxyz012.rest",
                "abcdefghijklmnopqrstuvwxyz012",
                "default/abcdefghijklmnopqrstuvwxyz012.rest",
            ),
            (
                "default",
                "abcdefghijklmnopqrstuvwxyz0.-.rest",
                "abcdefghijklmnopqrstuvwxyz0",
                "default/abcdefghijklmnopqrstuvwxyz0.-.rest",
            ),
        ];
        for (namespace, name, prefix, hashed) in table {
            let got = physical_name(namespace, name);
            assert_eq!(
                got,
                format!("{prefix}-{}", md5_hex(hashed)),
                "physical name of {namespace}/{name}"
            );
            assert!(
                is_dns1123_subdomain(&got),
                "{got} is not a DNS-1123 subdomain"
            );
        }
    }

    #[test]
    fn physical_names_differ_by_namespace() {
        assert_ne!(physical_name("a", "cm"), physical_name("b", "cm"));
    }

    #[test]
    fn dns1123_checks() {
        let table = [
            ("a", true, true),
            ("a-b.c", false, true),
            ("-a", false, false),
            ("a-", false, false),
            ("a.-b", false, false),
            ("A", false, false),
            ("", false, false),
        ];
        for (s, label, subdomain) in table {
            assert_eq!(is_dns1123_label(s), label, "label {s:?}");
            assert_eq!(is_dns1123_subdomain(s), subdomain, "subdomain {s:?}");
        }
        assert!(!is_dns1123_label(&"a".repeat(64)));
    }
}
